/**
 * The three doors the demo (and the black-box suite) may use: the gateway's public REST API with
 * an API key, the sandbox's control API, and nothing else. Neither client throws on an HTTP error:
 * callers read `status` and `body`, since the documented error answers are part of what is shown.
 */

/** One HTTP answer: status and parsed JSON body (text when not JSON, undefined when empty). */
export interface Answer<T = any> {
  status: number;
  body: T;
}

async function call<T>(base: string, method: string, path: string, init: { json?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
    signal: AbortSignal.timeout(init.timeoutMs ?? 30_000),
  });
  const text = await response.text();
  let body: unknown = undefined;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: response.status, body: body as T };
}

/** The gateway's REST API as one organization's API key sees it. */
export class GatewayClient {
  constructor(
    readonly baseUrl: string,
    private readonly secret: string,
  ) {}

  /** The same gateway seen with another API key (another organization, a revoked key). */
  as(secret: string): GatewayClient {
    return new GatewayClient(this.baseUrl, secret);
  }

  request<T = any>(method: string, path: string, json?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
    return call<T>(this.baseUrl, method, path, { json, headers: { authorization: `Bearer ${this.secret}`, ...headers } });
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }
  post<T = any>(path: string, json: unknown = {}) {
    return this.request<T>('POST', path, json);
  }
  patch<T = any>(path: string, json: unknown) {
    return this.request<T>('PATCH', path, json);
  }
  put<T = any>(path: string, json: unknown) {
    return this.request<T>('PUT', path, json);
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }
}

/** The provider sandbox's control API (apps/sandbox: `/sandbox/control`, `/sandbox/meta`, `/sandbox/model`). */
export class SandboxClient {
  constructor(readonly baseUrl: string) {}

  request<T = any>(method: string, path: string, json?: unknown): Promise<Answer<T>> {
    return call<T>(this.baseUrl, method, path, { json });
  }

  /** Requests the sandbox accepted as `provider` (meta, nylas, unipile, model). */
  async received(provider: string): Promise<Array<{ provider_id?: string; body: any; context: Record<string, any> }>> {
    const answer = await this.request('GET', `/sandbox/control/${provider}/received`);
    const body = answer.body as any;
    return body?.calls ?? [];
  }
}

/**
 * Polls `probe` until it answers something truthy; throws `DemoStepError` naming `what` after
 * `timeoutMs`. The platform is asynchronous (bus, outbox, webhooks): every "then" in the demo waits.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 30_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw new DemoStepError(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** A demo step that did not go as the platform documents. */
export class DemoStepError extends Error {}

/** Asserts an HTTP answer's status, else throws a DemoStepError with the error envelope. */
export function expectStatus<T>(what: string, answer: Answer<T>, ...statuses: number[]): T {
  if (!statuses.includes(answer.status)) {
    throw new DemoStepError(`${what}: HTTP ${answer.status} ${typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body)}`);
  }
  return answer.body;
}
