import { ProviderCallError } from '../providers/provider-adapter.js';
import { truncateText } from '@touchpoint/text';

/** Socket errors raised before a request was written: it provably never left. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** A provider's answer: status and parsed JSON body (or `{ raw }`). */
export interface ProviderAnswer {
  status: number;
  body: unknown;
  headers: Headers;
}

/**
 * One HTTP call to an email or LinkedIn provider. Transport failures become `ProviderCallError`:
 * timeout and a broken connection are `timeout`/`network` (the provider may have taken it: the
 * dispatcher parks the entry ambiguous), an unreachable host is a 503 (nothing left: retry). A
 * non-2xx answer is returned, not thrown: each adapter reads its own error body.
 */
export async function providerFetch(url: string, init: RequestInit, timeoutMs: number, name: string): Promise<ProviderAnswer> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    text = await response.text();
  } catch (err) {
    const e = err as { name?: string; message?: string; cause?: { code?: string; name?: string; message?: string } };
    if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.name === 'TimeoutError') throw new ProviderCallError({ kind: 'timeout' }, `${name} did not answer in time`, null, 'timeout');
    const code = e?.cause?.code;
    if (code && UNREACHABLE_CODES.has(code)) throw new ProviderCallError({ kind: 'http', httpStatus: 503, providerCode: null, retryAfterMs: null }, `${name} unreachable (${code})`, null, code);
    throw new ProviderCallError({ kind: 'network' }, `network failure: ${e?.cause?.message ?? e?.message ?? String(err)}`, null, code ?? 'network');
  }
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { raw: truncateText(text, 2000) };
  }
  return { status: response.status, body, headers: response.headers };
}

/** HTML of a plain-text body: escaped, line breaks kept (the approved text goes out as written). */
export function textToHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
    .replace(/\r\n?/g, '\n')
    .replace(/\n/g, '<br>');
}
