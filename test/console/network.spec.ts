import createClient from 'openapi-fetch';
import { fetchOrFailure, NETWORK_ERROR, NETWORK_ERROR_STATUS, networkFailure, unreachable } from '../../apps/console/src/api/network.js';

/** A fetch that never gets an answer, as a browser's does when the gateway is down. */
const failingFetch = async (): Promise<Response> => {
  throw new TypeError('Failed to fetch');
};

describe('console network failures', () => {
  it('networkFailure is our error envelope with network_error', async () => {
    const response = networkFailure();
    expect(response.status).toBe(NETWORK_ERROR_STATUS);
    expect(response.ok).toBe(false);
    await expect(response.json()).resolves.toEqual({ error: { code: 'network_error', message: 'The gateway could not be reached' } });
  });

  it('with the middleware, a thrown fetch answers network_error instead of rejecting', async () => {
    const client = createClient<Record<string, never>>({ baseUrl: 'http://gateway.invalid', fetch: failingFetch });
    client.use(unreachable);
    const answer = await (client as unknown as { GET: (path: string) => Promise<{ data?: unknown; error?: unknown; response: Response }> }).GET('/agentic/outreach/actions');
    expect(answer.data).toBeUndefined();
    expect(answer.response.status).toBe(NETWORK_ERROR_STATUS);
    expect(answer.error).toEqual({ error: NETWORK_ERROR });
  });

  it('without it, the same call rejects: the middleware is what keeps pages from hanging', async () => {
    const client = createClient<Record<string, never>>({ baseUrl: 'http://gateway.invalid', fetch: failingFetch });
    await expect((client as unknown as { GET: (path: string) => Promise<unknown> }).GET('/agentic/outreach/actions')).rejects.toThrow('Failed to fetch');
  });

  it('fetchOrFailure answers network_error for a fetch that throws, and passes real answers through', async () => {
    const original = globalThis.fetch;
    try {
      globalThis.fetch = failingFetch as typeof fetch;
      const failed = await fetchOrFailure('http://gateway.invalid/sessions/current');
      expect(failed.status).toBe(NETWORK_ERROR_STATUS);
      await expect(failed.json()).resolves.toEqual({ error: NETWORK_ERROR });
      globalThis.fetch = (async () => new Response('{}', { status: 401 })) as typeof fetch;
      expect((await fetchOrFailure('http://gateway.invalid/sessions/current')).status).toBe(401);
    } finally {
      globalThis.fetch = original;
    }
  });
});
