import { truncateText } from '@touchpoint/text';
import { Agent, type Dispatcher, FormData as WireFormData, request as undiciRequest } from 'undici';
import { ProviderCallError } from './provider-adapter.js';

/**
 * Socket errors of the connection phase (DNS lookup, TCP connect): the request was never written,
 * so a retry sends nothing twice. Each counts only with a syscall of that phase (see
 * `isUnsentFailure`): `read EHOSTUNREACH` or `read ETIMEDOUT` come from a connection that existed.
 * `ETIMEDOUT` of `connect` is a handshake the kernel gave up on (or one address of several that
 * Node tried in turn).
 */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT']);

/** Syscalls of the connection phase: `getaddrinfo` (the host's name) and `connect` (the TCP handshake). */
const CONNECT_PHASE_SYSCALLS = new Set(['getaddrinfo', 'connect']);

/** undici's own timers past the request's write (`headersTimeout`, `bodyTimeout`): like our deadline, the provider may have it. */
const ANSWER_TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Longest wait for a TCP connection (and TLS handshake) to a provider, ms; past it the call fails as
 * unreachable (`UND_ERR_CONNECT_TIMEOUT`, nothing written). undici's default, which the global
 * `fetch` used before: a call whose own deadline is shorter fails as `timeout` first.
 */
export const PROVIDER_CONNECT_TIMEOUT_MS = 10_000;

/** Longest part of an answer that is not JSON kept as `{ raw }`, characters. */
const RAW_BODY_MAX_CHARS = 2000;

/**
 * Headers every call carries unless the caller sets them: the ones the global `fetch` sent that a
 * provider (or a firewall in front of it) may look at. `accept-encoding` is not among them: answers
 * come uncompressed, as undici does not decompress.
 */
const DEFAULT_HEADERS: Readonly<Record<string, string>> = { accept: '*/*', 'user-agent': 'node' };

/**
 * A keep-alive agent as the providers' calls use it: one pool of connections per origin (scheme,
 * host, port), without a limit on their number. undici checks an idle connection for one turn of
 * the event loop before it reuses it (a close the server sent meanwhile is seen first); a call in
 * that turn takes another connection. An idle connection is closed after the server's
 * `Keep-Alive: timeout` hint less 2 s, or after 4 s without one (undici's defaults, as the global
 * `fetch` had).
 */
export function createProviderAgent(): Agent {
  return new Agent({ connect: { timeout: PROVIDER_CONNECT_TIMEOUT_MS } });
}

/** The connections of every `ProviderHttp` of the process: the adapters and the ownership proofs that speak to one provider share its warm connections. */
const PROVIDER_AGENT = createProviderAgent();

/** The answer's headers as the adapters read them. `Headers` satisfies it. */
export interface ProviderHeaders {
  /** The header's value (name in any case), a repeated header joined with `, ` as `Headers.get` does; null when absent. */
  get(name: string): string | null;
}

/** A provider's answer: status, the parsed JSON body (`{ raw }` when it is not JSON, null when empty) and headers. */
export interface ProviderAnswer {
  status: number;
  body: unknown;
  headers: ProviderHeaders;
}

/** Where one provider lives and how long a call to it may take. */
export interface ProviderEndpoint {
  /** The provider's name in error messages: `Graph`, `Meta`, `Nylas`, `Unipile`. */
  name: string;
  /** Base URL (from config); trailing slashes are ignored. */
  baseUrl: string;
  /** Deadline of one call (connect, request, headers and the whole body), ms; past it the call fails as `timeout`. */
  timeoutMs: number;
}

/** One request: a JSON body (sent with `content-type: application/json`), a multipart form, or none. */
export interface ProviderRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  json?: unknown;
  /** Sent as `multipart/form-data` with its boundary (undici encodes it; string and Blob values). */
  form?: FormData;
}

/**
 * The one HTTP client of the provider adapters (WhatsApp Graph, Nylas, Unipile) and of the
 * senders' ownership proofs, on undici's `request` over keep-alive connections (`PROVIDER_AGENT`,
 * or the dispatcher given). A non-2xx answer is returned, not thrown: each caller reads its
 * provider's own error body; a redirect (3xx) is returned too, never followed (the global `fetch`
 * followed it, turning a POST into a GET whose answer would have been read as the send's).
 *
 * Transport failures become `ProviderCallError`, and the kind decides whether the dispatcher may
 * retry (a message sent twice to a person is the worst outcome):
 * - no complete answer within `timeoutMs` (connecting, writing, waiting for headers, reading the
 *   body), or undici's headers/body timeout → `timeout` (the provider may have taken it: parked
 *   ambiguous). A deadline met while still connecting is a `timeout` too, as with `fetch`: the
 *   request API does not tell whether the request holds a connection yet;
 * - the connection was never made (DNS `ENOTFOUND`/`EAI_AGAIN`, `ECONNREFUSED`, `EHOSTUNREACH`,
 *   `ENETUNREACH`, `ETIMEDOUT` raised by `connect`, or `UND_ERR_CONNECT_TIMEOUT` after
 *   `PROVIDER_CONNECT_TIMEOUT_MS`) → http 503 with that code (nothing left: retried as transient);
 * - anything else (`UND_ERR_SOCKET` "other side closed", `ECONNRESET`/`EPIPE` of a read or write, a
 *   malformed answer, a body shorter than its length) → `network` (it may have arrived: ambiguous).
 *   This includes a kept-alive connection that the server closed while it was idle: undici checks
 *   an idle connection before reusing it, but when the close crosses the request on the wire the
 *   POST fails with `UND_ERR_SOCKET` or `ECONNRESET`, and from the client nothing proves the server
 *   did not read it. Nothing is retried here, not even a GET: the callers decide.
 */
export class ProviderHttp {
  constructor(
    private readonly endpoint: ProviderEndpoint,
    /** The connections to use; tests pass their own agent to close it or to stall its connector. */
    private readonly dispatcher: Dispatcher = PROVIDER_AGENT,
  ) {}

  /** The answer of `path` (after the base URL, starting with `/`). @throws ProviderCallError on a transport failure */
  async request(path: string, request: ProviderRequest): Promise<ProviderAnswer> {
    const { name, baseUrl, timeoutMs } = this.endpoint;
    const url = `${baseUrl.replace(/\/+$/, '')}${path}`;
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // undici only acts on an abort once the request holds a connection, so a stalled connect would
    // outlive the deadline: the race ends the call on time, the abort stops the request (unwritten
    // if it still waits for its connection, else its socket is destroyed).
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const passed = new DeadlinePassed(timeoutMs);
        reject(passed);
        abort.abort(passed);
      }, timeoutMs);
    });
    let exchange: Exchange;
    try {
      exchange = await Promise.race([this.exchange(url, request, abort.signal), deadline]);
    } catch (err) {
      throw transportFailure(name, err);
    } finally {
      clearTimeout(timer);
    }
    let parsed: unknown;
    try {
      parsed = exchange.text ? JSON.parse(exchange.text) : null;
    } catch {
      parsed = { raw: truncateText(exchange.text, RAW_BODY_MAX_CHARS) };
    }
    return { status: exchange.status, body: parsed, headers: new AnswerHeaders(exchange.headers) };
  }

  /** Sends the request and reads the whole answer (so its connection goes back to the pool). */
  private async exchange(url: string, request: ProviderRequest, signal: AbortSignal): Promise<Exchange> {
    const headers = request.json !== undefined ? { ...DEFAULT_HEADERS, ...request.headers, 'content-type': 'application/json' } : { ...DEFAULT_HEADERS, ...request.headers };
    const body = request.json !== undefined ? JSON.stringify(request.json) : request.form ? wireForm(request.form) : undefined;
    const answer = await undiciRequest(url, { dispatcher: this.dispatcher, method: request.method, headers, body, signal });
    return { status: answer.statusCode, headers: answer.headers, text: await answer.body.text() };
  }
}

/** Whether the provider accepted the call (any 2xx). */
export function isSuccess(answer: ProviderAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/**
 * Maps a transport failure of a call to `name` to a wire failure (table in `ProviderHttp`'s
 * docstring): `timeout`, unreachable (http 503, errorCode = the socket error's code) or `network`
 * (errorCode = the error's code, else `network`). Exported for its table test.
 */
export function transportFailure(name: string, err: unknown): ProviderCallError {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : null;
  if (err instanceof DeadlinePassed || (code !== null && ANSWER_TIMEOUT_CODES.has(code))) {
    return new ProviderCallError({ kind: 'timeout' }, `${name} did not answer in time`, null, 'timeout');
  }
  if (code !== null && isUnsentFailure(err)) {
    return new ProviderCallError({ kind: 'http', httpStatus: 503, providerCode: null, retryAfterMs: null }, `${name} unreachable (${code})`, null, code);
  }
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  return new ProviderCallError({ kind: 'network' }, `network failure: ${message}`, null, code ?? 'network');
}

/**
 * Whether `err` was raised before the request had a connection: undici's connect timeout, or an
 * unreachable code raised by the name lookup or the TCP connect. When the host has several
 * addresses, Node's connect tries each and fails with an `AggregateError` (the first code, no
 * syscall): it counts when every attempt it holds failed that way.
 */
function isUnsentFailure(err: unknown): boolean {
  const e = err as { code?: unknown; syscall?: unknown } | null;
  if (e?.code === 'UND_ERR_CONNECT_TIMEOUT') return true;
  if (err instanceof AggregateError) return err.errors.length > 0 && err.errors.every(isUnsentFailure);
  return typeof e?.code === 'string' && UNREACHABLE_CODES.has(e.code) && typeof e.syscall === 'string' && CONNECT_PHASE_SYSCALLS.has(e.syscall);
}

/** The deadline of one call passed (the abort reason of its request). */
class DeadlinePassed extends Error {
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = 'DeadlinePassed';
  }
}

/** What one exchange read off the wire. */
interface Exchange {
  status: number;
  /** undici's parsed headers: lower-case names, a repeated header as an array. */
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** `ProviderHeaders` over undici's parsed headers, without building a `Headers` per answer. */
class AnswerHeaders implements ProviderHeaders {
  constructor(private readonly raw: Record<string, string | string[] | undefined>) {}

  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}

/**
 * The caller's form as undici's own `FormData`: undici encodes only its own class as multipart, and
 * the global one belongs to the copy of undici inside Node. Values are copied, not re-read.
 */
function wireForm(form: FormData): WireFormData {
  const wire = new WireFormData();
  for (const [key, value] of form) {
    if (typeof value === 'string') wire.append(key, value);
    else wire.append(key, value, value.name);
  }
  return wire;
}
