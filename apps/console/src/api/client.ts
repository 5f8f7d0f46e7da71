import createClient, { type Middleware } from 'openapi-fetch';
import { unreachable } from './network.js';
import type { components, paths } from './schema.js';

/** The gateway's schemas, by their OpenAPI names (`Schemas['ReviewCardDto']`). */
export type Schemas = components['schemas'];

/** Methods that change nothing: every other one carries the session's CSRF token. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The header the gateway reads the CSRF token from (the gateway's session credential). */
export const CSRF_HEADER = 'X-CSRF-Token';

/**
 * The session's CSRF token, in memory only: a reload reads it again from `GET /sessions/current`.
 * The session itself is the HttpOnly cookie, which no script here can read.
 */
let csrfToken: string | null = null;
const signedOutListeners = new Set<() => void>();

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Calls `listener` when an API call answers 401 (the session expired or was revoked elsewhere). */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => void signedOutListeners.delete(listener);
}

const session: Middleware = {
  onRequest({ request }) {
    if (!SAFE_METHODS.has(request.method) && csrfToken) request.headers.set(CSRF_HEADER, csrfToken);
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && !new URL(request.url).pathname.startsWith('/sessions')) signedOutListeners.forEach((listener) => listener());
    return response;
  },
};

/**
 * The typed client of the gateway's REST API (openapi-fetch over the types generated from its
 * OpenAPI document, `npm run console:client`). Same origin, the session cookie goes with every call.
 * A call the gateway never answers (network error) answers 503 `network_error` instead of
 * throwing (`unreachable`), so every caller shows it and resets like any failed call.
 */
export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' });
api.use(session, unreachable);

/** The error envelope's inner object, as the console shows it. */
export interface ApiError {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

/** The envelope of a failed call, or a stand-in for an answer that was not one (a proxy's 502). */
export function errorOf(response: Response, body: unknown): ApiError {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  if (error && typeof error.code === 'string') return { status: response.status, code: error.code, message: typeof error.message === 'string' ? error.message : error.code, details: error.details };
  return { status: response.status, code: `http_${response.status}`, message: response.statusText || 'request failed' };
}

/** Throws `ApiFailure` unless the call succeeded; answers its data. */
export async function must<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiFailure(errorOf(response, error));
  return data as T;
}

/** A failed call, with the gateway's error code. */
export class ApiFailure extends Error {
  constructor(readonly error: ApiError) {
    super(`${error.code}: ${error.message}`);
    this.name = 'ApiFailure';
  }
}
