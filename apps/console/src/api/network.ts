import type { Middleware } from 'openapi-fetch';

/** The code and message of a call that got no answer at all (the gateway down, the network gone). */
export const NETWORK_ERROR = { code: 'network_error', message: 'The gateway could not be reached' } as const;
/**
 * The HTTP status the console gives a call that got no answer. A browser gives none (a thrown
 * `fetch`); a `Response` needs one from 200 to 599, and 503 says "try again later" as the
 * gateway's own unavailable answers do. The code, `network_error`, tells the two apart.
 */
export const NETWORK_ERROR_STATUS = 503;

/**
 * A stand-in answer for a `fetch` that threw: our error envelope with `network_error`, so every
 * caller reads it as it reads a failed call (`errorOf`), resets what it was doing and shows it.
 */
export function networkFailure(): Response {
  return new Response(JSON.stringify({ error: NETWORK_ERROR }), { status: NETWORK_ERROR_STATUS, statusText: NETWORK_ERROR.message, headers: { 'content-type': 'application/json' } });
}

/** openapi-fetch middleware: a thrown `fetch` answers `networkFailure()` instead of rejecting. */
export const unreachable: Middleware = {
  onError() {
    return networkFailure();
  },
};

/** `fetch`, except that a call that throws (no answer) resolves to `networkFailure()`. */
export async function fetchOrFailure(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch {
    return networkFailure();
  }
}
