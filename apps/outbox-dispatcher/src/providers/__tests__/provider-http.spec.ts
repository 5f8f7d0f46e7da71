import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Agent, errors } from 'undici';
import { ProviderCallError } from '../provider-adapter.js';
import { createProviderAgent, isSuccess, ProviderHttp, transportFailure } from '../provider-http.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/** The wire failure of a call that never left: retried like a provider's 503. */
const UNREACHABLE = { kind: 'http', httpStatus: 503, providerCode: null, retryAfterMs: null };

/** A Node socket error as `net` raises it: `<syscall> <code> ...` with both as properties. */
const socketError = (code: string, syscall: string): Error => Object.assign(new Error(`${syscall} ${code} 203.0.113.7:443`), { code, syscall });

describe(ProviderHttp.name, () => {
  let server: Server;
  let baseUrl: string;
  let handler: Handler;
  /** Server-side sockets in the order they connected (one per connection the client opened). */
  let connections: Socket[];
  const agents: Agent[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => handler(req, body, res));
    });
    server.on('connection', (socket: Socket) => connections.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    connections = [];
  });

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.destroy()));
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** A client on the process's shared connections, or on `agent` (closed after the test). */
  const sut = (overrides: { baseUrl?: string; timeoutMs?: number; agent?: Agent } = {}) => {
    if (overrides.agent) agents.push(overrides.agent);
    return new ProviderHttp({ name: 'Nylas', baseUrl: overrides.baseUrl ?? `${baseUrl}//`, timeoutMs: overrides.timeoutMs ?? 2000 }, overrides.agent);
  };

  const failureOf = async (call: Promise<unknown>): Promise<ProviderCallError> => {
    try {
      await call;
    } catch (err) {
      expect(err).toBeInstanceOf(ProviderCallError);
      return err as ProviderCallError;
    }
    throw new Error('expected a ProviderCallError');
  };

  /** undici checks an idle connection for one turn of the event loop before reusing it; a call within that turn opens another. */
  const idleTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

  const closed = (socket: Socket) => new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));

  describe('request', () => {
    it('joins the base URL (trailing slashes ignored) and the path, sends JSON with its content type, and parses the JSON answer', async () => {
      let seen: { url?: string; method?: string; type?: string; auth?: string; length?: string; body?: string } = {};
      handler = (req, body, res) => {
        seen = { url: req.url, method: req.method, type: req.headers['content-type'], auth: req.headers.authorization, length: req.headers['content-length'], body };
        res.writeHead(200, { 'content-type': 'application/json', 'x-trace': 't1' }).end('{"data":{"id":"m1"}}');
      };
      const answer = await sut().request('/v3/grants/g1/messages/send?x=1', { method: 'POST', headers: { authorization: 'Bearer k' }, json: { b: 1 } });
      expect(seen).toEqual({ url: '/v3/grants/g1/messages/send?x=1', method: 'POST', type: 'application/json', auth: 'Bearer k', length: '7', body: '{"b":1}' });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ data: { id: 'm1' } });
      expect(answer.headers.get('x-trace')).toBe('t1');
      expect(isSuccess(answer)).toBe(true);
    });

    it('sends the accept and user-agent headers fetch sent, unless the caller sets its own', async () => {
      const seen: { accept?: string; agent?: string }[] = [];
      handler = (req, _body, res) => {
        seen.push({ accept: req.headers.accept, agent: req.headers['user-agent'] });
        res.writeHead(200).end('{}');
      };
      await sut().request('/a', { method: 'GET' });
      await sut().request('/b', { method: 'GET', headers: { accept: 'application/json' } });
      expect(seen).toEqual([
        { accept: '*/*', agent: 'node' },
        { accept: 'application/json', agent: 'node' },
      ]);
    });

    it('sends a form as multipart with its boundary, every field and file, without a JSON content type', async () => {
      let type: string | undefined;
      let body = '';
      handler = (req, b, res) => {
        type = req.headers['content-type'];
        body = b;
        res.writeHead(201).end('{"message_id":"x"}');
      };
      const form = new FormData();
      form.set('account_id', 'acc-1');
      form.set('text', 'hello\nthere');
      form.append('attendees_ids', 'ACoA1');
      form.append('attendees_ids', 'ACoA2');
      form.append('attachments', new Blob(['file body'], { type: 'text/plain' }), 'note.txt');
      const answer = await sut().request('/api/v1/chats', { method: 'POST', headers: { 'x-api-key': 'k' }, form });
      expect(type).toMatch(/^multipart\/form-data; boundary=/);
      const boundary = type!.split('boundary=')[1]!;
      const parts = body
        .split(`--${boundary}`)
        .slice(1, -1)
        .map((part) => part.replace(/^\r\n/, '').replace(/\r\n$/, ''));
      expect(parts).toEqual([
        'Content-Disposition: form-data; name="account_id"\r\n\r\nacc-1',
        'Content-Disposition: form-data; name="text"\r\n\r\nhello\r\nthere',
        'Content-Disposition: form-data; name="attendees_ids"\r\n\r\nACoA1',
        'Content-Disposition: form-data; name="attendees_ids"\r\n\r\nACoA2',
        'Content-Disposition: form-data; name="attachments"; filename="note.txt"\r\nContent-Type: text/plain\r\n\r\nfile body',
      ]);
      expect(body.endsWith(`--${boundary}--\r\n`)).toBe(true);
      expect(answer.status).toBe(201);
      expect(answer.body).toEqual({ message_id: 'x' });
    });

    it.each([
      ['an empty body', 204, '', null],
      ['an empty 200 body', 200, '', null],
      ['a body that is not JSON', 502, '<html>Bad gateway</html>', { raw: '<html>Bad gateway</html>' }],
      ['a JSON 4xx error body', 404, '{"error":{"type":"not_found"}}', { error: { type: 'not_found' } }],
      ['a JSON 5xx error body', 503, '{"error":{"code":131000,"message":"Something went wrong"}}', { error: { code: 131000, message: 'Something went wrong' } }],
      ['a JSON body after a byte order mark', 200, '\uFEFF{"id":"m1"}', { id: 'm1' }],
    ])('returns, not throws, %s (status %p)', async (_what, status, text, body) => {
      handler = (_req, _body, res) => res.writeHead(status).end(text);
      const answer = await sut().request('/x', { method: 'GET' });
      expect(answer.status).toBe(status);
      expect(answer.body).toEqual(body);
      expect(isSuccess(answer)).toBe(status < 300);
    });

    it('keeps 2000 characters of a long body that is not JSON', async () => {
      handler = (_req, _body, res) => res.writeHead(500).end('x'.repeat(5000));
      const answer = await sut().request('/x', { method: 'GET' });
      expect((answer.body as { raw: string }).raw).toHaveLength(2000);
    });

    it('returns a redirect as the answer and does not follow it (a POST must not become a GET elsewhere)', async () => {
      const urls: string[] = [];
      handler = (req, _body, res) => {
        urls.push(`${req.method} ${req.url}`);
        res.writeHead(302, { location: '/elsewhere' }).end();
      };
      const answer = await sut().request('/send', { method: 'POST', json: { b: 1 } });
      expect(answer.status).toBe(302);
      expect(answer.headers.get('location')).toBe('/elsewhere');
      expect(urls).toEqual(['POST /send']);
    });

    it('reads headers by name in any case, a repeated one joined with ", " as Headers does, null when absent', async () => {
      handler = (_req, _body, res) => {
        res.setHeader('Retry-After', '30');
        res.setHeader('x-multi', ['a', 'b']);
        res.writeHead(429).end('{}');
      };
      const answer = await sut().request('/x', { method: 'POST', json: {} });
      expect(answer.headers.get('retry-after')).toBe('30');
      expect(answer.headers.get('Retry-After')).toBe('30');
      expect(answer.headers.get('x-multi')).toBe('a, b');
      expect(answer.headers.get('x-absent')).toBeNull();
    });

    it('reuses one kept-alive connection for calls in turn (each answer is read to its end)', async () => {
      handler = (_req, _body, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pad: 'y'.repeat(64 * 1024) }));
      const http = sut({ agent: createProviderAgent() });
      for (let i = 0; i < 3; i++) {
        expect((await http.request('/x', { method: 'POST', json: { i } })).status).toBe(200);
        await idleTurn();
      }
      expect(connections).toHaveLength(1);
    });

    it('opens a new connection when the server closed the idle kept-alive one between two calls, and the call succeeds', async () => {
      handler = (_req, body, res) => res.writeHead(200).end(body);
      const http = sut({ agent: createProviderAgent() });
      expect((await http.request('/x', { method: 'POST', json: { n: 1 } })).body).toEqual({ n: 1 });
      expect(connections).toHaveLength(1);
      server.closeIdleConnections();
      await closed(connections[0]!);
      const second = await http.request('/x', { method: 'POST', json: { n: 2 } });
      expect(second.body).toEqual({ n: 2 });
      expect(connections).toHaveLength(2);
    });

    it('fails a POST as network, never unreachable, when the server drops a reused kept-alive connection after reading it', async () => {
      let calls = 0;
      handler = (req, _body, res) => {
        calls += 1;
        if (calls === 1) res.writeHead(200).end('{}');
        else req.socket.destroy();
      };
      const http = sut({ agent: createProviderAgent() });
      await http.request('/x', { method: 'POST', json: { n: 1 } });
      await idleTurn();
      const failure = await failureOf(http.request('/x', { method: 'POST', json: { n: 2 } }));
      expect(connections).toHaveLength(1);
      expect(calls).toBe(2);
      expect(failure.failure).toEqual({ kind: 'network' });
      expect(failure.errorCode).toBe('UND_ERR_SOCKET');
    });

    it('fails as timeout (the provider may have taken it) when no answer comes within the deadline', async () => {
      handler = () => undefined;
      const started = Date.now();
      const failure = await failureOf(sut({ timeoutMs: 150 }).request('/slow', { method: 'GET' }));
      expect(Date.now() - started).toBeLessThan(1000);
      expect(failure.failure).toEqual({ kind: 'timeout' });
      expect(failure.errorCode).toBe('timeout');
      expect(failure.message).toBe('Nylas did not answer in time');
    });

    it('fails as timeout when the headers came but the body does not end within the deadline (the deadline covers the whole answer)', async () => {
      handler = (_req, _body, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"messages":[');
      };
      const started = Date.now();
      const failure = await failureOf(sut({ timeoutMs: 200 }).request('/slow-body', { method: 'POST', json: {} }));
      expect(Date.now() - started).toBeLessThan(1000);
      expect(failure.failure).toEqual({ kind: 'timeout' });
    });

    it('fails as timeout at the deadline even while the connection is still being made', async () => {
      const stalled = new Agent({ connect: () => undefined });
      const started = Date.now();
      const failure = await failureOf(sut({ timeoutMs: 150, agent: stalled }).request('/x', { method: 'POST', json: {} }));
      expect(Date.now() - started).toBeLessThan(1000);
      expect(failure.failure).toEqual({ kind: 'timeout' });
    });

    it('fails as a 503 named after the socket error when the host refuses the connection (nothing left)', async () => {
      const refusing = createServer();
      await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
      const port = (refusing.address() as AddressInfo).port;
      await new Promise<void>((resolve) => refusing.close(() => resolve()));
      const failure = await failureOf(sut({ baseUrl: `http://127.0.0.1:${port}` }).request('/x', { method: 'POST', json: {} }));
      expect(failure.failure).toEqual(UNREACHABLE);
      expect(failure.errorCode).toBe('ECONNREFUSED');
      expect(failure.message).toBe('Nylas unreachable (ECONNREFUSED)');
    });

    it('fails as a 503 when the host name does not resolve (nothing left)', async () => {
      const failure = await failureOf(sut({ baseUrl: 'http://provider.invalid' }).request('/x', { method: 'POST', json: {} }));
      expect(failure.failure).toEqual(UNREACHABLE);
      expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(failure.errorCode);
    });

    it.each([
      ['destroys the socket after reading the request', (req: IncomingMessage) => req.socket.destroy()],
      ['resets the connection after reading the request', (req: IncomingMessage) => req.socket.resetAndDestroy()],
      [
        'breaks the connection mid-answer',
        (_req: IncomingMessage, res: ServerResponse) => {
          res.writeHead(200, { 'content-length': '100' });
          res.write('{"id":');
          setTimeout(() => res.socket?.destroy(), 20);
        },
      ],
    ])('fails as network (the provider may have taken it) when the server %s', async (_what, act) => {
      handler = (req, _body, res) => act(req, res);
      const failure = await failureOf(sut().request('/x', { method: 'POST', json: {} }));
      expect(failure.failure).toEqual({ kind: 'network' });
      expect(failure.message).toMatch(/^network failure: /);
    });
  });

  describe('transportFailure', () => {
    const KINDS = { timeout: { kind: 'timeout' }, unreachable: UNREACHABLE, network: { kind: 'network' } };
    const aggregate = (...inner: Error[]) => Object.assign(new AggregateError(inner), { code: (inner[0] as Error & { code: string }).code });

    it.each([
      ['undici headers timeout', 'timeout', 'timeout', new errors.HeadersTimeoutError()],
      ['undici body timeout', 'timeout', 'timeout', new errors.BodyTimeoutError()],
      ['undici connect timeout', 'unreachable', 'UND_ERR_CONNECT_TIMEOUT', new errors.ConnectTimeoutError()],
      ['connect ECONNREFUSED', 'unreachable', 'ECONNREFUSED', socketError('ECONNREFUSED', 'connect')],
      ['getaddrinfo ENOTFOUND', 'unreachable', 'ENOTFOUND', socketError('ENOTFOUND', 'getaddrinfo')],
      ['getaddrinfo EAI_AGAIN', 'unreachable', 'EAI_AGAIN', socketError('EAI_AGAIN', 'getaddrinfo')],
      ['connect EHOSTUNREACH', 'unreachable', 'EHOSTUNREACH', socketError('EHOSTUNREACH', 'connect')],
      ['connect ENETUNREACH', 'unreachable', 'ENETUNREACH', socketError('ENETUNREACH', 'connect')],
      ['connect ETIMEDOUT', 'unreachable', 'ETIMEDOUT', socketError('ETIMEDOUT', 'connect')],
      ['every address of the host refused or timed out', 'unreachable', 'ECONNREFUSED', aggregate(socketError('ECONNREFUSED', 'connect'), socketError('ETIMEDOUT', 'connect'))],
      ['read EHOSTUNREACH (a connection that existed)', 'network', 'EHOSTUNREACH', socketError('EHOSTUNREACH', 'read')],
      ['read ETIMEDOUT (a connection that existed)', 'network', 'ETIMEDOUT', socketError('ETIMEDOUT', 'read')],
      ['read ECONNRESET', 'network', 'ECONNRESET', socketError('ECONNRESET', 'read')],
      ['write EPIPE (a stale kept-alive connection)', 'network', 'EPIPE', socketError('EPIPE', 'write')],
      ['ECONNREFUSED without a syscall', 'network', 'ECONNREFUSED', Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })],
      ['an aggregate holding an error of a connection that existed', 'network', 'ECONNREFUSED', aggregate(socketError('ECONNREFUSED', 'connect'), socketError('ECONNRESET', 'read'))],
      ['undici "other side closed"', 'network', 'UND_ERR_SOCKET', new errors.SocketError('other side closed')],
      ['a body shorter than its content-length', 'network', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH', new errors.ResponseContentLengthMismatchError()],
      ['an aborted request', 'network', 'UND_ERR_ABORTED', new errors.RequestAbortedError()],
      ['an error without a code', 'network', 'network', new Error('boom')],
    ] as const)('%s → %s, error code %s', (_what, kind, errorCode, err) => {
      const result = transportFailure('Graph', err);
      expect(result).toBeInstanceOf(ProviderCallError);
      expect(result.failure).toEqual(KINDS[kind]);
      expect(result.errorCode).toBe(errorCode);
    });

    it('names the provider and the code in the message of each kind', () => {
      expect(transportFailure('Graph', new errors.HeadersTimeoutError()).message).toBe('Graph did not answer in time');
      expect(transportFailure('Graph', socketError('ECONNREFUSED', 'connect')).message).toBe('Graph unreachable (ECONNREFUSED)');
      expect(transportFailure('Graph', new errors.SocketError('other side closed')).message).toBe('network failure: other side closed');
    });
  });
});
