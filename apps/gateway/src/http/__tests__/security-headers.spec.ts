import Fastify, { type FastifyInstance } from 'fastify';
import { helmetHeaders, installSecurityHeaders } from '../security-headers.js';

/** The gateway-wide CSP: helmet's defaults, never framed, no upgrade-insecure-requests. */
const GATEWAY_CSP = "default-src 'self';base-uri 'self';font-src 'self' https: data:;form-action 'self';frame-ancestors 'none';img-src 'self' data:;object-src 'none';script-src 'self';script-src-attr 'none';style-src 'self' https: 'unsafe-inline'";

/** Every header the gateway adds to an answer, as `@fastify/helmet` 13 (helmet 8.3) set them with the same options. */
const GATEWAY_HEADERS = {
  'content-security-policy': GATEWAY_CSP,
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'DENY',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
  'cache-control': 'no-store',
};

describe('installSecurityHeaders', () => {
  let sut: FastifyInstance;
  let url: string;
  // A real listener: light-my-request (Fastify's inject) cannot be loaded by Jest's module loader.
  const get = async (path: string) => {
    const res = await fetch(`${url}${path}`);
    await res.arrayBuffer();
    return { status: res.status, headers: Object.fromEntries(res.headers) };
  };

  beforeAll(async () => {
    sut = Fastify();
    installSecurityHeaders(sut);
    sut.get('/api', async () => ({ ok: true }));
    sut.get('/cached', async (_request, reply) => reply.header('cache-control', 'public, max-age=60').send('asset'));
    sut.get('/own-csp', async (_request, reply) => reply.header('content-security-policy', "default-src 'none'").send('page'));
    sut.get('/fails', async () => {
      throw new Error('boom');
    });
    url = await sut.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => sut.close());

  it.each([
    ['an answer', '/api', 200],
    ['an error answer', '/fails', 500],
    ['a route that does not exist', '/nowhere', 404],
  ])('sets every security header and no-store on %s', async (_case, path, status) => {
    const res = await get(path);
    expect(res.status).toBe(status);
    expect(res.headers).toEqual(expect.objectContaining(GATEWAY_HEADERS));
  });

  it('keeps the cache-control an answer sets itself', async () => {
    const res = await get('/cached');
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('lets an answer replace the CSP with its own', async () => {
    const res = await get('/own-csp');
    expect(res.headers['content-security-policy']).toBe("default-src 'none'");
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });
});

describe('helmetHeaders', () => {
  it('gives the headers in the order helmet sets them', () => {
    expect(helmetHeaders({ contentSecurityPolicy: false, strictTransportSecurity: false }).map(([name]) => name)).toEqual([
      'Cross-Origin-Opener-Policy',
      'Cross-Origin-Resource-Policy',
      'Origin-Agent-Cluster',
      'Referrer-Policy',
      'X-Content-Type-Options',
      'X-DNS-Prefetch-Control',
      'X-Download-Options',
      'X-Frame-Options',
      'X-Permitted-Cross-Domain-Policies',
      'X-XSS-Protection',
    ]);
  });

  it('throws on options helmet refuses', () => {
    expect(() => helmetHeaders({ contentSecurityPolicy: { directives: { 'default-src': null } } })).toThrow(/default-src/);
  });
});
