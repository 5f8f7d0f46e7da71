import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { ErrorEnvelope } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { LONE_SURROGATE_PROBLEM, NUL_PROBLEM } from '../../apps/gateway/src/http/unstorable-characters.js';
import { gatewayBuilders, gatewayTable, httpClient, type SeededKey } from './gateway-world.js';

const VERIFY_TOKEN = 'hardening-verify-token';

/** The gateway's edge against hostile input: NUL characters and lone surrogates, router refusals, logs and headers. */
describe('Gateway hardening', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let key: SeededKey;

  beforeAll(async () => {
    world = await createTestWorld('gwharden');
    const config = world.config(GatewayConfig, { META_VERIFY_TOKEN: VERIFY_TOKEN });
    app = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await app.getUrl());
    key = await gatewayBuilders(app).organizationWithKey({ scopes: ['admin'] });
  });
  afterAll(() => world.close());

  const expectEnvelope = (res: { status: number; headers: Headers; body: Partial<ErrorEnvelope> | undefined }, status: number, code: string) => {
    expect({ status: res.status, code: res.body?.error?.code, message: typeof res.body?.error?.message }).toEqual({ status, code, message: 'string' });
    expect(res.headers.get('x-request-id')).toMatch(/^[\w.:-]{1,128}$/);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  };

  describe('NUL characters', () => {
    it('answers 400 validation_failed naming the body field, and stores nothing', async () => {
      const res = await http('POST', '/api-keys', { secret: key.secret, json: { name: 'a\u0000b', scopes: ['admin'] } });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details).toEqual([{ field: 'name', problems: [NUL_PROBLEM] }]);
      expect(await world.sql(`SELECT 1 FROM ${gatewayTable(world, 'api_keys')} WHERE organization_id = $1 AND name LIKE 'a%'`, [key.organizationId])).toEqual([]);
    });

    it('names a nested field, a query parameter and a path parameter', async () => {
      const nested = await http('POST', '/api-keys', { secret: key.secret, json: { name: 'ok', scopes: ['admin', 'x\u0000'] } });
      expect(nested.body.error.details).toEqual([{ field: 'scopes.1', problems: [NUL_PROBLEM] }]);
      const query = await http('GET', '/api-keys?limit=1&cursor=%00', { secret: key.secret });
      expectEnvelope(query, 400, 'validation_failed');
      expect(query.body.error.details).toEqual([{ field: 'cursor', problems: [NUL_PROBLEM] }]);
      const path = await http('DELETE', '/api-keys/a%00b', { secret: key.secret });
      expectEnvelope(path, 400, 'validation_failed');
      expect(path.body.error.details.map((d: { field: string }) => d.field)).toContain('id');
    });

    it('leaves the provider webhooks to strip NULs themselves (their signed bytes are checked first)', async () => {
      const res = await http('POST', '/webhooks/meta', { json: { object: 'whatsapp_business_account', entry: [{ id: 'a\u0000b' }] }, headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` } });
      expectEnvelope(res, 401, 'unauthorized');
    });
  });

  describe('lone surrogates', () => {
    it('answers 400 validation_failed to an operator message whose text holds half a UTF-16 pair, before the route runs', async () => {
      const res = await http('POST', `/conversations/${randomUUID()}/messages`, { secret: key.secret, json: { idempotency_key: 'k-1', text: 'a\ud800b' } });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details).toEqual([{ field: 'text', problems: [LONE_SURROGATE_PROBLEM] }]);
    });

    it('names each field with its problems, a NUL and a lone surrogate in one field included, and stores nothing', async () => {
      const res = await http('POST', '/api-keys', { secret: key.secret, json: { name: 'a\u0000\uDE00', scopes: ['admin', 'x\uD83D'] } });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details).toEqual([
        { field: 'name', problems: [NUL_PROBLEM, LONE_SURROGATE_PROBLEM] },
        { field: 'scopes.1', problems: [LONE_SURROGATE_PROBLEM] },
      ]);
      expect(await world.sql(`SELECT 1 FROM ${gatewayTable(world, 'api_keys')} WHERE organization_id = $1 AND name LIKE 'a%'`, [key.organizationId])).toEqual([]);
    });

    it('takes a whole emoji (a surrogate pair) as it is', async () => {
      const res = await http('POST', '/api-keys', { secret: key.secret, json: { name: 'key \u{1F600}', scopes: ['admin'] } });
      expect([res.status, res.body.name]).toEqual([201, 'key \u{1F600}']);
    });
  });

  describe('router refusals', () => {
    it('answers a path parameter over the router limit with 414 uri_too_long in the envelope, with the request id', async () => {
      const res = await http('GET', `/senders/${'a'.repeat(101)}`, { secret: key.secret, headers: { 'x-request-id': 'router-414-check' } });
      expectEnvelope(res, 414, 'uri_too_long');
      expect(res.headers.get('x-request-id')).toBe('router-414-check');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
      // Refused before helmet's hook: the error answer still cannot be framed or referred from.
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    });

    it('answers a URL that cannot be decoded with 400 malformed_request in the envelope', async () => {
      const res = await http('GET', '/senders/%E0%A4%A', { secret: key.secret });
      expectEnvelope(res, 400, 'malformed_request');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
    });
  });

  describe('access log', () => {
    it('logs the route and the query parameter names, never their values', async () => {
      const logger = app.get<Logger>(LOGGER);
      const info = jest.spyOn(logger, 'info');
      try {
        const res = await http('GET', `/webhooks/meta?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=c-123`);
        expect(res.status).toBe(200);
        await http('GET', '/api-keys?cursor=secret-cursor-value', { secret: key.secret });
        const lines = info.mock.calls.map(([line]) => line as Record<string, unknown>).filter((line) => line?.event === 'http.request');
        expect(lines.map((line) => line.url)).toEqual(expect.arrayContaining(['/webhooks/meta?hub.mode=[redacted]&hub.verify_token=[redacted]&hub.challenge=[redacted]', '/api-keys?cursor=[redacted]']));
        const logged = JSON.stringify(info.mock.calls);
        expect(logged).not.toContain(VERIFY_TOKEN);
        expect(logged).not.toContain('secret-cursor-value');
      } finally {
        info.mockRestore();
      }
    });
  });

  describe('security headers', () => {
    it('answers API requests with nosniff, no framing, no referrer and no-store', async () => {
      for (const res of [await http('GET', '/me', { secret: key.secret }), await http('GET', '/me'), await http('GET', '/no-such-route')]) {
        expect({
          nosniff: res.headers.get('x-content-type-options'),
          frame: res.headers.get('x-frame-options'),
          referrer: res.headers.get('referrer-policy'),
          cache: res.headers.get('cache-control'),
        }).toEqual({ nosniff: 'nosniff', frame: 'DENY', referrer: 'no-referrer', cache: 'no-store' });
      }
    });

    it('forbids framing the docs and lets the Swagger UI load its own scripts and styles', async () => {
      const res = await http('GET', '/docs/json');
      expect(res.status).toBe(200);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toMatch(/script-src 'self'/);
      expect(csp).toMatch(/style-src 'self'[^;]*'unsafe-inline'/);
      expect(csp).not.toContain('upgrade-insecure-requests');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
    });
  });

  describe('Meta verify token', () => {
    it.each([
      ['the right token', VERIFY_TOKEN, 200],
      ['a wrong token of the same length', VERIFY_TOKEN.replace(/.$/, 'X'), 403],
      ['a prefix of the token', VERIFY_TOKEN.slice(0, 5), 403],
      ['no token', undefined, 403],
    ])('answers the challenge only for %s', async (_case, token, status) => {
      const query = new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.challenge': 'c-42', ...(token === undefined ? {} : { 'hub.verify_token': token }) });
      const res = await http('GET', `/webhooks/meta?${query}`);
      expect(res.status).toBe(status);
      if (status === 200) expect(res.body).toBe('c-42');
      else expectEnvelope(res, 403, 'forbidden');
    });

    it('answers 403, not 500, to a verify token given twice', async () => {
      const res = await http('GET', `/webhooks/meta?hub.mode=subscribe&hub.challenge=c&hub.verify_token=${VERIFY_TOKEN}&hub.verify_token=${VERIFY_TOKEN}`);
      expectEnvelope(res, 403, 'forbidden');
    });
  });
});
