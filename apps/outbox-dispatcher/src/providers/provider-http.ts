import { truncateText } from '@touchpoint/text';
import { ProviderCallError } from './provider-adapter.js';

/** Socket errors raised before a request was written: it provably never left. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** Longest part of an answer that is not JSON kept as `{ raw }`, characters. */
const RAW_BODY_MAX_CHARS = 2000;

/** A provider's answer: status, the parsed JSON body (`{ raw }` when it is not JSON, null when empty) and headers. */
export interface ProviderAnswer {
  status: number;
  body: unknown;
  headers: Headers;
}

/** Where one provider lives and how long a call to it may take. */
export interface ProviderEndpoint {
  /** The provider's name in error messages: `Graph`, `Meta`, `Nylas`, `Unipile`. */
  name: string;
  /** Base URL (from config); trailing slashes are ignored. */
  baseUrl: string;
  /** Deadline of one call, ms; past it the call fails as `timeout`. */
  timeoutMs: number;
}

/** One request: a JSON body (sent with `content-type: application/json`), a multipart form, or none. */
export interface ProviderRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  json?: unknown;
  form?: FormData;
}

/**
 * The one HTTP client of the provider adapters (WhatsApp Graph, Nylas, Unipile) and of the
 * senders' ownership proofs. Transport failures become `ProviderCallError`: no answer within the
 * deadline is `timeout` and a broken connection is `network` (the provider may have taken it: the
 * dispatcher parks the entry ambiguous); an unreachable host is a 503 (nothing left: retry), with
 * the socket error's code (`ECONNREFUSED`, …) as the error code. A non-2xx answer is returned, not
 * thrown: each caller reads its provider's own error body.
 */
export class ProviderHttp {
  constructor(private readonly endpoint: ProviderEndpoint) {}

  /** The answer of `path` (after the base URL, starting with `/`). @throws ProviderCallError on a transport failure */
  async request(path: string, request: ProviderRequest): Promise<ProviderAnswer> {
    const { name, baseUrl, timeoutMs } = this.endpoint;
    const headers = request.json !== undefined ? { ...request.headers, 'content-type': 'application/json' } : request.headers;
    const body = request.json !== undefined ? JSON.stringify(request.json) : request.form;
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${baseUrl.replace(/\/+$/, '')}${path}`, { method: request.method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
      text = await response.text();
    } catch (err) {
      throw transportError(name, err);
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = { raw: truncateText(text, RAW_BODY_MAX_CHARS) };
    }
    return { status: response.status, body: parsed, headers: response.headers };
  }
}

/** Whether the provider accepted the call (any 2xx). */
export function isSuccess(answer: ProviderAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** Maps a fetch failure to a wire failure: timeout, network (may have arrived) or unreachable. */
function transportError(name: string, err: unknown): ProviderCallError {
  const e = err as { name?: string; message?: string; cause?: { code?: string; name?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.name === 'TimeoutError') return new ProviderCallError({ kind: 'timeout' }, `${name} did not answer in time`, null, 'timeout');
  const code = e?.cause?.code;
  // The connection was never made, so no request existed: safe to retry like a transient fault.
  if (code && UNREACHABLE_CODES.has(code)) return new ProviderCallError({ kind: 'http', httpStatus: 503, providerCode: null, retryAfterMs: null }, `${name} unreachable (${code})`, null, code);
  return new ProviderCallError({ kind: 'network' }, `network failure: ${e?.cause?.message ?? e?.message ?? String(err)}`, null, code ?? 'network');
}
