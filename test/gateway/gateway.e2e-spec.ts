import { Body, Controller, Module, Post, Req } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { PublicRoute } from '../../apps/gateway/src/auth/auth.decorators.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GATEWAY_ROUTE_MODULES, GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import type { RequestWithRawBody } from '../../apps/gateway/src/http/raw-body.js';
import { gatewayBuilders, gatewayTable, httpClient, type SeededKey } from './gateway-world.js';

/** A stand-in for the webhook ingress: echoes the raw bytes it received next to the parsed body. */
@Controller('webhooks/test-echo')
@PublicRoute()
class EchoWebhookController {
  @Post()
  echo(@Req() request: RequestWithRawBody, @Body() body: unknown) {
    return { raw: request.rawBody?.toString('utf8') ?? null, parsed: body };
  }
}
@Module({ controllers: [EchoWebhookController] })
class EchoWebhookModule {}

const PING_DEADLINE_MS = 800;

describe('Gateway (HTTP)', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let appUrl: string;
  let build: ReturnType<typeof gatewayBuilders>;
  let orgA: SeededKey;
  let orgB: SeededKey;

  beforeAll(async () => {
    world = await createTestWorld('gateway');
    const config = world.config(GatewayConfig, { SERVICE_PING_TIMEOUT_MS: String(PING_DEADLINE_MS), BODY_LIMIT_BYTES: String(64 * 1024) });
    app = await world.start(GatewayModule.forRoot(config, [...GATEWAY_ROUTE_MODULES, EchoWebhookModule]), gatewayStartOptions(config));
    appUrl = await app.getUrl();
    http = httpClient(appUrl);
    build = gatewayBuilders(app);
    orgA = await build.organizationWithKey({ scopes: ['admin', 'agents:read'] });
    orgB = await build.organizationWithKey({ scopes: ['admin'] });
  });
  afterAll(() => world.close());

  describe('GET /me', () => {
    it('answers the organization, key, scopes and creator of the key', async () => {
      const res = await http('GET', '/me', { secret: orgA.secret });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        organization_id: orgA.organizationId,
        api_key_id: orgA.apiKeyId,
        scopes: ['agents:read', 'admin'],
        created_by: { member_id: orgA.memberId, role: 'admin', active: true },
      });
    });

    it.each([
      ['no Authorization header', undefined],
      ['another scheme', 'Basic dXNlcjpwYXNz'],
      ['a bearer value that is not a key', 'Bearer nonsense'],
      ['an unknown key', `Bearer tp_${'x'.repeat(43)}`],
    ])('answers 401 unauthorized for %s', async (_case, authorization) => {
      const res = await http('GET', '/me', { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    });
  });

  describe('tenancy', () => {
    it("answers 404 (never 403) for another organization's customer_id in the path", async () => {
      const res = await http('GET', `/organizations/${orgB.organizationId}`, { secret: orgA.secret });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: 'not_found', message: 'not found' } });
    });

    it('answers the same 404 for an organization id that does not exist', async () => {
      const res = await http('GET', '/organizations/00000000-0000-4000-8000-000000000000', { secret: orgA.secret });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    });

    it("answers 404 for another organization's customer_id in the query string or the body", async () => {
      const inQuery = await http('GET', `/me?customer_id=${orgB.organizationId}`, { secret: orgA.secret });
      expect(inQuery.status).toBe(404);
      const inBoth = await http('GET', `/me?customer_id=${orgA.organizationId}&customer_id=${orgB.organizationId}`, { secret: orgA.secret });
      expect(inBoth.status).toBe(404);
      const inBody = await http('POST', '/api-keys', { secret: orgA.secret, json: { customer_id: orgB.organizationId, name: 'x', scopes: ['agents:read'] } });
      expect(inBody.status).toBe(404);
      expect(inBody.body.error.code).toBe('not_found');
      expect(await build.apiKeys.list(orgB.organizationId)).toHaveLength(1);
    });

    it('answers its own organization', async () => {
      const res = await http('GET', `/organizations/${orgA.organizationId}`, { secret: orgA.secret });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: orgA.organizationId, name: expect.any(String) });
    });
  });

  describe('scopes and creators', () => {
    it("answers 403 forbidden to a key without the route's scope", async () => {
      const reader = await build.organizationWithKey({ organizationId: orgA.organizationId, scopes: ['agents:read'], email: 'reader@example.com' });
      for (const path of ['/api-keys', '/system/services']) {
        const res = await http('GET', path, { secret: reader.secret });
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe('forbidden');
      }
      expect((await http('GET', '/me', { secret: reader.secret })).status).toBe(200);
    });

    it('answers 403 on an admin-created-key route once the creator is demoted, and again after promotion works', async () => {
      const admin = await build.organizationWithKey({ organizationId: orgA.organizationId, scopes: ['admin'], email: 'boss@example.com' });
      expect((await http('GET', '/api-keys', { secret: admin.secret })).status).toBe(200);

      // member:add with the same email and another role is how the CLI demotes.
      await build.members.add({ organizationId: orgA.organizationId, email: 'BOSS@example.com', role: 'operator' });
      const demoted = await http('GET', '/api-keys', { secret: admin.secret });
      expect(demoted.status).toBe(403);
      expect(demoted.body.error.code).toBe('forbidden');
      // Routes that only need the scope keep working for the key.
      expect((await http('GET', '/me', { secret: admin.secret })).body.created_by).toEqual({ member_id: admin.memberId, role: 'operator', active: true });

      await build.members.add({ organizationId: orgA.organizationId, email: 'boss@example.com', role: 'admin' });
      expect((await http('GET', '/api-keys', { secret: admin.secret })).status).toBe(200);

      await build.members.update(orgA.organizationId, admin.memberId, { active: false });
      expect((await http('GET', '/api-keys', { secret: admin.secret })).status).toBe(403);
    });

    it('refuses to let an operator mint an admin-scoped key', async () => {
      const operator = await build.members.add({ organizationId: orgA.organizationId, email: 'op@example.com', role: 'operator' });
      await expect(build.apiKeys.create({ organizationId: orgA.organizationId, createdByMemberId: operator.id, scopes: ['admin'] })).rejects.toMatchObject({ code: 'forbidden' });
      const { key } = await build.apiKeys.create({ organizationId: orgA.organizationId, createdByMemberId: operator.id, scopes: ['messaging:read'] });
      expect(key.scopes).toEqual(['messaging:read']);
    });
  });

  describe('API keys', () => {
    it('creates a key whose secret is shown once, stored only as its SHA-256, and works at once', async () => {
      const res = await http('POST', '/api-keys', { secret: orgA.secret, json: { name: 'crm sync', scopes: ['agents:write', 'agents:read'] } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: 'crm sync', scopes: ['agents:read', 'agents:write'], organization_id: orgA.organizationId, created_by_member_id: orgA.memberId, revoked_at: null });
      const secret: string = res.body.secret;
      expect(secret).toMatch(/^tp_[A-Za-z0-9_-]{43}$/);

      const rows = await world.sql<Record<string, unknown>>(`SELECT * FROM ${gatewayTable(world, 'api_keys')} WHERE id = $1`, [res.body.id]);
      expect(rows).toHaveLength(1);
      expect((rows[0].secret_hash as Buffer).equals(createHash('sha256').update(secret).digest())).toBe(true);
      expect(JSON.stringify(rows[0])).not.toContain(secret.slice(10));

      expect(rows[0].last_used_at).toBeNull();
      const me = await http('GET', '/me', { secret });
      expect(me.body).toMatchObject({ api_key_id: res.body.id, created_by: { member_id: orgA.memberId, role: 'admin' } });
      const [used] = await world.sql<{ last_used_at: Date | null }>(`SELECT last_used_at FROM ${gatewayTable(world, 'api_keys')} WHERE id = $1`, [res.body.id]);
      expect(used.last_used_at).toBeInstanceOf(Date);
      const listed = await http('GET', '/api-keys', { secret: orgA.secret });
      expect(listed.body.items.map((k: { id: string }) => k.id)).toContain(res.body.id);
      expect(JSON.stringify(listed.body)).not.toContain(secret);
    });

    it('revokes a key: the next request with it answers 401', async () => {
      const victim = await build.organizationWithKey({ organizationId: orgA.organizationId, scopes: ['agents:read'], email: 'leaver@example.com' });
      expect((await http('GET', '/me', { secret: victim.secret })).status).toBe(200);

      const revoked = await http('DELETE', `/api-keys/${victim.apiKeyId}`, { secret: orgA.secret });
      expect(revoked.status).toBe(200);
      expect(revoked.body).toMatchObject({ api_key_id: victim.apiKeyId, revoked: true });

      const after = await http('GET', '/me', { secret: victim.secret });
      expect(after.status).toBe(401);
      expect(after.body.error.code).toBe('unauthorized');
      const [row] = await world.sql<{ revoked_at: Date | null }>(`SELECT revoked_at FROM ${gatewayTable(world, 'api_keys')} WHERE id = $1`, [victim.apiKeyId]);
      expect(row.revoked_at).toBeInstanceOf(Date);
    });

    it("answers 404 when revoking another organization's key, and leaves it working", async () => {
      const res = await http('DELETE', `/api-keys/${orgB.apiKeyId}`, { secret: orgA.secret });
      expect(res.status).toBe(404);
      expect((await http('GET', '/me', { secret: orgB.secret })).status).toBe(200);
    });
  });

  describe('request errors', () => {
    it('answers 400 invalid_json to a malformed JSON body (whitespace only included)', async () => {
      const malformed = await http('POST', '/api-keys', { secret: orgA.secret, body: '{"name": "x",', headers: { 'content-type': 'application/json' } });
      expect(malformed.status).toBe(400);
      expect(malformed.body).toEqual({ error: { code: 'invalid_json', message: expect.any(String) } });
      const blank = await http('POST', '/api-keys', { secret: orgA.secret, body: '  ', headers: { 'content-type': 'application/json' } });
      expect(blank.status).toBe(400);
      expect(blank.body.error.code).toBe('invalid_json');
    });

    it('treats an empty body sent with Content-Type: application/json as no body', async () => {
      const json = { 'content-type': 'application/json', 'content-length': '0' };
      const bare = await http('POST', '/api-keys', { secret: orgA.secret });
      const empty = await http('POST', '/api-keys', { secret: orgA.secret, body: '', headers: json });
      expect(bare.status).toBe(400);
      expect(empty).toMatchObject({ status: bare.status, body: bare.body });
      const victim = await build.organizationWithKey({ organizationId: orgA.organizationId, scopes: ['agents:read'], email: 'empty-body@example.com' });
      const revoked = await http('DELETE', `/api-keys/${victim.apiKeyId}`, { secret: orgA.secret, body: '', headers: json });
      expect(revoked).toMatchObject({ status: 200, body: { api_key_id: victim.apiKeyId, revoked: true } });
    });

    it.each([
      ['at the top', '{"name":"x","__proto__":{"admin":true}}', '__proto__'],
      ['nested', '{"name":"x","scopes":[{"__proto__":{}}]}', 'scopes.0.__proto__'],
      ['escaped', '{"name":"x","\\u005f_proto__":{}}', '__proto__'],
      ['as constructor.prototype', '{"name":"x","constructor":{"prototype":{}}}', 'constructor.prototype'],
    ])('answers 400 validation_failed naming a forbidden key %s (valid JSON, not invalid_json)', async (_case, body, field) => {
      const res = await http('POST', '/api-keys', { secret: orgA.secret, body, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { code: 'validation_failed', message: expect.any(String), details: [{ field, problems: [expect.stringContaining('forbidden')] }] } });
    });

    it('answers 400 validation_failed naming an unknown field', async () => {
      const res = await http('POST', '/api-keys', { secret: orgA.secret, json: { name: 'x', scopes: ['agents:read'], colour: 'blue' } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details).toEqual([{ field: 'colour', problems: [expect.stringContaining('should not exist')] }]);
    });

    it.each([
      ['a string where an array is expected', { name: 'x', scopes: 'admin' }, 'scopes'],
      ['an unknown scope', { name: 'x', scopes: ['agents:read', 'root'] }, 'scopes'],
      ['a number where a string is expected', { name: 42, scopes: ['agents:read'] }, 'name'],
      ['a missing field', { scopes: ['agents:read'] }, 'name'],
    ])('answers 400 validation_failed naming the field for %s', async (_case, json, field) => {
      const res = await http('POST', '/api-keys', { secret: orgA.secret, json });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details).toEqual([{ field, problems: expect.arrayContaining([expect.any(String)]) }]);
    });

    it('answers 400 validation_failed naming a malformed path parameter', async () => {
      const res = await http('DELETE', '/api-keys/not-a-uuid', { secret: orgA.secret });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([{ field: 'id', problems: [expect.any(String)] }]);
    });

    it('answers 413 payload_too_large to a body over the limit', async () => {
      const res = await http('POST', '/api-keys', { secret: orgA.secret, json: { name: 'x'.repeat(70 * 1024), scopes: ['agents:read'] } });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('payload_too_large');
    });

    it('answers 431 headers_too_large and 400 malformed_request in our envelope when Node refuses the request before any route', async () => {
      // Raw TCP: a client that would refuse to send such a request itself.
      const raw = (request: string) =>
        new Promise<{ status: number; body: unknown; head: string }>((resolve, reject) => {
          const { hostname, port } = new URL(appUrl);
          const socket = connect(Number(port), hostname, () => socket.write(request));
          let data = '';
          socket.on('data', (chunk) => (data += chunk.toString('utf8')));
          socket.on('error', reject);
          socket.on('close', () => {
            const [head, body] = data.split('\r\n\r\n');
            resolve({ status: Number(head.split(' ')[1]), body: JSON.parse(body), head: head.toLowerCase() });
          });
        });
      const oversized = await raw(`GET /health/live HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(oversized).toEqual({ status: 431, body: { error: { code: 'headers_too_large', message: expect.any(String) } }, head: expect.any(String) });
      const malformed = await raw(`NOT HTTP AT ALL\r\n\r\n`);
      expect(malformed).toEqual({ status: 400, body: { error: { code: 'malformed_request', message: expect.any(String) } }, head: expect.any(String) });
      for (const { head } of [oversized, malformed]) {
        expect(head).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/);
        expect(head).toContain('\r\nx-frame-options: deny\r\n');
        expect(head).toContain('\r\nreferrer-policy: no-referrer\r\n');
      }
    });

    it('answers 415 unsupported_media_type to a body that is not JSON', async () => {
      const res = await http('POST', '/api-keys', { secret: orgA.secret, body: 'name=x', headers: { 'content-type': 'text/plain' } });
      expect(res.status).toBe(415);
      expect(res.body.error.code).toBe('unsupported_media_type');
    });

    it('answers 404 route_not_found in the envelope for an unknown route', async () => {
      const res = await http('GET', '/no/such/route', { secret: orgA.secret });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: 'route_not_found', message: expect.any(String) } });
    });

    it('answers 404 route_not_found for an unknown route whatever its body (an empty or malformed JSON body is not checked first)', async () => {
      for (const body of ['', '{not json']) {
        const res = await http('PATCH', '/conversations', { secret: orgA.secret, body, headers: { 'content-type': 'application/json' } });
        expect([res.status, res.body]).toEqual([404, { error: { code: 'route_not_found', message: 'no route PATCH /conversations' } }]);
      }
    });
  });

  describe('request id', () => {
    it('echoes the caller’s x-request-id, on failures too', async () => {
      const ok = await http('GET', '/me', { secret: orgA.secret, headers: { 'x-request-id': 'client-req-42' } });
      expect(ok.headers.get('x-request-id')).toBe('client-req-42');
      const failed = await http('GET', '/me', { headers: { 'x-request-id': 'client-req-43' } });
      expect(failed.status).toBe(401);
      expect(failed.headers.get('x-request-id')).toBe('client-req-43');
    });

    it('generates one when none (or a malformed one) is sent', async () => {
      const res = await http('GET', '/me', { secret: orgA.secret, headers: { 'x-request-id': 'bad id with spaces' } });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  describe('OpenAPI', () => {
    it('serves an OpenAPI document at /docs/json listing every route with its scopes and errors', async () => {
      const res = await http('GET', '/docs/json');
      expect(res.status).toBe(200);
      const doc = res.body;
      expect(doc.openapi).toMatch(/^3\./);
      expect(doc.components.securitySchemes['api-key']).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/me', '/api-keys', '/api-keys/{id}', '/organizations/{customer_id}', '/system/services', '/system/services/{name}/ping']));
      const create = doc.paths['/api-keys'].post;
      expect(create['x-required-scopes']).toEqual(['admin']);
      expect(create.description).toContain('`admin`');
      expect(create.description).toContain('created by an admin');
      expect(create.security).toEqual([{ 'api-key': [] }, { 'console-session': [] }]);
      expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '413']));
      expect(doc.paths['/system/services/{name}/ping'].get.responses['503']).toBeDefined();
      expect(doc.paths['/health/live']).toBeUndefined();
    });
  });

  describe('webhook raw bodies', () => {
    it('keeps the exact bytes of a /webhooks/ body beside the parsed JSON, without a key', async () => {
      const raw = '{ "b": 1,\n  "a": "é" }';
      const res = await http('POST', '/webhooks/test-echo', { body: raw, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ raw, parsed: { b: 1, a: 'é' } });
    });

    it('still answers 413 to an oversized webhook body', async () => {
      const res = await http('POST', '/webhooks/test-echo', { json: { pad: 'x'.repeat(70 * 1024) } });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('payload_too_large');
    });
  });

  describe('forwarding to services', () => {
    it('answers 503 service_unavailable within the deadline once the service has stopped', async () => {
      const abuse = await world.start(AbuseModule.forRoot(world.config(AbuseConfig)));
      const up = await http('GET', '/system/services/abuse/ping', { secret: orgA.secret });
      expect(up.status).toBe(200);
      expect(up.body).toMatchObject({ service: 'abuse', ok: true, latency_ms: expect.any(Number) });

      await abuse.close();
      const down = await http('GET', '/system/services/abuse/ping', { secret: orgA.secret });
      expect(down.status).toBe(503);
      expect(down.body.error.code).toBe('service_unavailable');
      // It waited for the deadline, and not much longer.
      expect(down.ms).toBeGreaterThanOrEqual(PING_DEADLINE_MS - 50);
      expect(down.ms).toBeLessThan(PING_DEADLINE_MS + 700);

      const all = await http('GET', '/system/services', { secret: orgA.secret });
      expect(all.status).toBe(200);
      const byName = Object.fromEntries(all.body.services.map((s: { service: string; status: string }) => [s.service, s.status]));
      expect(byName).toMatchObject({ gateway: 'up', abuse: 'unavailable', messaging: 'unavailable' });
    });

    it('answers 404 for a service that does not exist', async () => {
      const res = await http('GET', '/system/services/nope/ping', { secret: orgA.secret });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    });
  });
});
