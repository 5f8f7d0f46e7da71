import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebhookSender } from '../webhook-sender.js';

/** One request the receiver got: its method, headers and exact body bytes. */
interface Received {
  method?: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

describe(WebhookSender.name, () => {
  let sut: WebhookSender;
  let receiver: http.Server;
  let url: string;
  let received: Received[];
  let connections: number;
  /** How the receiver answers the next requests. */
  let answer: (res: http.ServerResponse) => void;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ method: req.method, headers: req.headers, body: Buffer.concat(chunks) });
        answer(res);
      });
    });
    receiver.on('connection', () => connections++);
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks/meta`;
  });

  beforeEach(() => {
    sut = new WebhookSender();
    received = [];
    connections = 0;
    answer = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
  });

  afterEach(() => sut.onModuleDestroy());
  afterAll(() => new Promise((resolve) => receiver.close(resolve)));

  describe('post', () => {
    it('sends the body byte for byte with the given headers and its content-length, and resolves with the answer', async () => {
      const body = '{"text":"olá 👋","n":1}';
      const res = await sut.post(url, body, { 'content-type': 'application/json', 'x-hub-signature-256': 'sha256=abc', 'user-agent': 'facebookexternalua' });
      expect(res).toEqual({ status: 200, body: '{"received":true}' });
      expect(received).toHaveLength(1);
      expect(received[0]!.method).toBe('POST');
      expect(received[0]!.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
      expect(received[0]!.headers).toEqual(expect.objectContaining({ 'content-type': 'application/json', 'x-hub-signature-256': 'sha256=abc', 'user-agent': 'facebookexternalua', 'content-length': String(Buffer.byteLength(body)) }));
    });

    it('resolves with a non-2xx answer instead of throwing', async () => {
      answer = (res) => res.writeHead(503).end('try later');
      expect(await sut.post(url, '{}', {})).toEqual({ status: 503, body: 'try later' });
    });

    it('keeps the connection open for the next webhooks', async () => {
      for (let i = 0; i < 5; i++) await sut.post(url, `{"i":${i}}`, { 'content-type': 'application/json' });
      expect(received.map((r) => r.body.toString())).toEqual(['{"i":0}', '{"i":1}', '{"i":2}', '{"i":3}', '{"i":4}']);
      expect(connections).toBe(1);
    });

    it('rejects with the socket error when nothing listens', async () => {
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      await expect(sut.post(`http://127.0.0.1:${port}/webhooks/meta`, '{}', {})).rejects.toThrow(/ECONNREFUSED/);
    });

    it('rejects when the connection closes before the answer ends', async () => {
      answer = (res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('partial');
        setTimeout(() => res.socket?.destroy(), 20);
      };
      await expect(sut.post(url, '{}', {})).rejects.toThrow();
    });

    it('rejects a URL that is not http or https', async () => {
      await expect(sut.post('ftp://127.0.0.1/webhooks', '{}', {})).rejects.toThrow(/http or https/);
    });
  });
});
