import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderCallError } from '../provider-adapter.js';
import { isSuccess, ProviderHttp } from '../provider-http.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

describe(ProviderHttp.name, () => {
  let server: Server;
  let baseUrl: string;
  let handler: Handler;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => handler(req, body, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const sut = (overrides: { baseUrl?: string; timeoutMs?: number } = {}) => new ProviderHttp({ name: 'Nylas', baseUrl: overrides.baseUrl ?? `${baseUrl}//`, timeoutMs: overrides.timeoutMs ?? 2000 });

  const failureOf = async (call: Promise<unknown>): Promise<ProviderCallError> => {
    try {
      await call;
    } catch (err) {
      expect(err).toBeInstanceOf(ProviderCallError);
      return err as ProviderCallError;
    }
    throw new Error('expected a ProviderCallError');
  };

  describe('request', () => {
    it('joins the base URL (trailing slashes ignored) and the path, sends JSON with its content type, and parses the JSON answer', async () => {
      let seen: { url?: string; method?: string; type?: string; auth?: string; body?: string } = {};
      handler = (req, body, res) => {
        seen = { url: req.url, method: req.method, type: req.headers['content-type'], auth: req.headers.authorization, body };
        res.writeHead(200, { 'content-type': 'application/json', 'x-trace': 't1' }).end('{"data":{"id":"m1"}}');
      };
      const answer = await sut().request('/v3/grants/g1/messages/send?x=1', { method: 'POST', headers: { authorization: 'Bearer k' }, json: { b: 1 } });
      expect(seen).toEqual({ url: '/v3/grants/g1/messages/send?x=1', method: 'POST', type: 'application/json', auth: 'Bearer k', body: '{"b":1}' });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ data: { id: 'm1' } });
      expect(answer.headers.get('x-trace')).toBe('t1');
      expect(isSuccess(answer)).toBe(true);
    });

    it('sends a form as multipart, without a JSON content type', async () => {
      let type: string | undefined;
      let body = '';
      handler = (req, b, res) => {
        type = req.headers['content-type'];
        body = b;
        res.writeHead(201).end('{"message_id":"x"}');
      };
      const form = new FormData();
      form.set('text', 'hello');
      const answer = await sut().request('/api/v1/chats', { method: 'POST', form });
      expect(type).toMatch(/^multipart\/form-data; boundary=/);
      expect(body).toContain('hello');
      expect(answer.status).toBe(201);
    });

    it.each([
      ['an empty body', 204, '', null],
      ['a body that is not JSON', 502, '<html>Bad gateway</html>', { raw: '<html>Bad gateway</html>' }],
      ['a JSON error body', 404, '{"error":{"type":"not_found"}}', { error: { type: 'not_found' } }],
    ])('returns, not throws, %s (status %p)', async (_what, status, text, body) => {
      handler = (_req, _body, res) => res.writeHead(status).end(text);
      const answer = await sut().request('/x', { method: 'GET' });
      expect(answer.status).toBe(status);
      expect(answer.body).toEqual(body);
      expect(isSuccess(answer)).toBe(status < 300);
    });

    it('fails as timeout (the provider may have taken it) when no answer comes within the deadline', async () => {
      handler = () => undefined;
      const failure = await failureOf(sut({ timeoutMs: 150 }).request('/slow', { method: 'GET' }));
      expect(failure.failure).toEqual({ kind: 'timeout' });
      expect(failure.errorCode).toBe('timeout');
      expect(failure.message).toBe('Nylas did not answer in time');
    });

    it('fails as a 503 named after the socket error when the host refuses the connection (nothing left)', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const failure = await failureOf(sut({ baseUrl: `http://127.0.0.1:${port}` }).request('/x', { method: 'GET' }));
      expect(failure.failure).toEqual({ kind: 'http', httpStatus: 503, providerCode: null, retryAfterMs: null });
      expect(failure.errorCode).toBe('ECONNREFUSED');
      expect(failure.message).toBe('Nylas unreachable (ECONNREFUSED)');
    });

    it('fails as network (the provider may have taken it) when the connection breaks mid-answer', async () => {
      handler = (req) => req.socket.destroy();
      const failure = await failureOf(sut().request('/x', { method: 'POST', json: {} }));
      expect(failure.failure).toEqual({ kind: 'network' });
      expect(failure.message).toMatch(/^network failure: /);
    });
  });
});
