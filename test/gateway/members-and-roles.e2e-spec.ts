import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GATEWAY_ROUTE_MODULES, GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, gatewayTable, httpClient, type SeededKey } from './gateway-world.js';

type Operation = { 'x-required-scopes'?: string[] };

/**
 * Roles are checked at call time (DESIGN §3): every route of the `admin` scope needs a key whose
 * creator is an admin right now, a removed member's keys stop at once, and who acts is what the
 * credential proves (seed 003 §4.5), never what a request claims.
 */
describe('Gateway members and roles', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let build: ReturnType<typeof gatewayBuilders>;
  let owner: SeededKey;
  let n = 0;

  beforeAll(async () => {
    world = await createTestWorld('gateway_roles');
    // Short service deadlines: a route that passes the guard forwards to a service that is not running.
    const config = world.config(GatewayConfig, { SERVICE_PING_TIMEOUT_MS: '300', RPC_TIMEOUT_MS: '300' });
    app = await world.start(GatewayModule.forRoot(config, GATEWAY_ROUTE_MODULES), gatewayStartOptions(config));
    http = httpClient(await app.getUrl());
    build = gatewayBuilders(app);
    owner = await build.organizationWithKey({ scopes: ['admin'] });
  });
  afterAll(() => world.close());

  /** Another member of the owner's organization with a key of `scopes`. */
  const member = (role: 'admin' | 'operator', scopes: ('admin' | 'outreach:read' | 'messaging:read')[]) => build.organizationWithKey({ organizationId: owner.organizationId, role, scopes, email: `person${++n}@example.com` });
  /** Every operation of the OpenAPI document that requires the `admin` scope, with its path filled in. */
  const adminRoutes = async (): Promise<{ method: string; path: string }[]> => {
    const doc = (await http('GET', '/docs/json')).body as { paths: Record<string, Record<string, Operation>> };
    return Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, op]) => op['x-required-scopes']?.includes('admin'))
        .map(([method, _op]) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, () => randomUUID()) })),
    );
  };

  describe('admin scope', () => {
    it('refuses every admin-scope route with 403 once the key creator is an operator, and serves them again after promotion', async () => {
      const routes = await adminRoutes();
      expect(routes.map((r) => r.path)).toEqual(expect.arrayContaining(['/api-keys', '/members', '/senders', '/suppressions']));
      const admin = await member('admin', ['admin']);
      expect((await http('GET', '/members', { secret: admin.secret })).status).toBe(200);

      await build.members.update(owner.organizationId, admin.memberId, { role: 'operator' });

      const answers = await Promise.all(routes.map(async (r) => ({ ...r, res: await http(r.method, r.path, { secret: admin.secret, json: r.method === 'GET' || r.method === 'DELETE' ? undefined : {} }) })));
      const notRefused = answers.filter((a) => a.res.status !== 403 || a.res.body?.error?.code !== 'forbidden').map((a) => `${a.method} ${a.path} → ${a.res.status}`);
      expect(notRefused).toEqual([]);
      // The key still works where the admin scope alone is not what is asked.
      expect((await http('GET', '/me', { secret: admin.secret })).body.created_by).toMatchObject({ member_id: admin.memberId, role: 'operator', active: true });

      await build.members.update(owner.organizationId, admin.memberId, { role: 'admin' });
      expect((await http('GET', '/members', { secret: admin.secret })).status).toBe(200);
    });

    it('documents every admin-scope route as needing an admin creator', async () => {
      const doc = (await http('GET', '/docs/json')).body as { paths: Record<string, Record<string, Operation & { 'x-admin-created-key'?: boolean }>> };
      const undocumented = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op['x-required-scopes']?.includes('admin') && op['x-admin-created-key'] !== true)
          .map(([method]) => `${method} ${path}`),
      );
      expect(undocumented).toEqual([]);
    });
  });

  describe('DELETE /members/{member_id}', () => {
    it('removes the member and revokes every key they created: each answers 401 on the very next request', async () => {
      const leaver = await member('operator', ['outreach:read']);
      const second = await build.apiKeys.create({ organizationId: owner.organizationId, createdByMemberId: leaver.memberId, scopes: ['messaging:read'], name: 'second' });
      expect((await http('GET', '/me', { secret: leaver.secret })).status).toBe(200);

      const res = await http('DELETE', `/members/${leaver.memberId}`, { secret: owner.secret });

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: leaver.memberId, organization_id: owner.organizationId, active: false });
      expect([...res.body.revoked_api_key_ids].sort()).toEqual([leaver.apiKeyId, second.key.id].sort());
      for (const secret of [leaver.secret, second.secret]) {
        const after = await http('GET', '/me', { secret });
        expect([after.status, after.body.error.code]).toEqual([401, 'unauthorized']);
        expect(after.headers.get('x-request-id')).toBeTruthy();
      }
      const rows = await world.sql<{ revoked_at: Date | null }>(`SELECT revoked_at FROM ${gatewayTable(world, 'api_keys')} WHERE created_by_member_id = $1`, [leaver.memberId]);
      expect(rows.map((r) => r.revoked_at instanceof Date)).toEqual([true, true]);
      const listed = await http('GET', '/members', { secret: owner.secret });
      expect(listed.body.items.find((m: { id: string }) => m.id === leaver.memberId)).toMatchObject({ active: false });
      // Idempotent: the same answer, nothing more to revoke.
      const again = await http('DELETE', `/members/${leaver.memberId}`, { secret: owner.secret });
      expect(again.body).toMatchObject({ id: leaver.memberId, active: false, revoked_api_key_ids: [] });
    });

    it('stops the keys of a removed admin at once, including on the member routes', async () => {
      const admin = await member('admin', ['admin']);
      const removed = await http('DELETE', `/members/${admin.memberId}`, { secret: owner.secret });
      expect(removed.status).toBe(200);
      const after = await http('DELETE', `/members/${owner.memberId}`, { secret: admin.secret });
      expect([after.status, after.body.error.code]).toEqual([401, 'unauthorized']);
      expect((await http('GET', '/me', { secret: owner.secret })).status).toBe(200);
    });

    it('refuses to remove the only active admin (409 last_admin, nothing revoked), and two admins removing each other at once leave one', async () => {
      const solo = await build.organizationWithKey({ scopes: ['admin'] });
      const self = await http('DELETE', `/members/${solo.memberId}`, { secret: solo.secret });
      expect([self.status, self.body.error.code]).toEqual([409, 'last_admin']);
      expect((await http('GET', '/me', { secret: solo.secret })).status).toBe(200);

      const second = await build.organizationWithKey({ organizationId: solo.organizationId, role: 'admin', scopes: ['admin'], email: `second${++n}@example.com` });
      const [a, b] = await Promise.all([http('DELETE', `/members/${second.memberId}`, { secret: solo.secret }), http('DELETE', `/members/${solo.memberId}`, { secret: second.secret })]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const listed = (await http('GET', '/members', { secret: a.status === 200 ? solo.secret : second.secret })).body;
      const admins = listed.items.filter((m: { role: string; active: boolean }) => m.role === 'admin' && m.active);
      expect(admins).toHaveLength(1);
    });

    it("answers 403 to a key without the admin scope and 404 for another organization's member, removing nobody", async () => {
      const operator = await member('operator', ['messaging:read']);
      const target = await member('operator', ['outreach:read']);
      const refused = await http('DELETE', `/members/${target.memberId}`, { secret: operator.secret });
      expect([refused.status, refused.body.error.code]).toEqual([403, 'forbidden']);

      const other = await build.organizationWithKey({ scopes: ['admin'] });
      const foreign = await http('DELETE', `/members/${target.memberId}`, { secret: other.secret });
      expect([foreign.status, foreign.body.error.code]).toEqual([404, 'not_found']);
      expect((await http('GET', '/me', { secret: target.secret })).status).toBe(200);
      const malformed = await http('DELETE', '/members/not-a-uuid', { secret: owner.secret });
      expect([malformed.status, malformed.body.error.code]).toEqual([400, 'validation_failed']);
    });
  });

  describe('a key whose creator left', () => {
    it('answers 403 on every route, even one that needs no scope, while the member is marked as having left', async () => {
      const leaver = await member('operator', ['outreach:read']);
      await build.members.update(owner.organizationId, leaver.memberId, { active: false });

      for (const path of ['/me', '/agentic/outreach/campaigns']) {
        const res = await http('GET', path, { secret: leaver.secret });
        expect([res.status, res.body.error.code]).toEqual([403, 'forbidden']);
      }
    });
  });

  describe('impersonation', () => {
    it('passes the mark of an impersonation key on to the keys it creates; no request field sets or clears it', async () => {
      const { secret } = await build.apiKeys.create({ organizationId: owner.organizationId, createdByMemberId: owner.memberId, scopes: ['admin'], name: 'support', impersonatedBy: 'support@touchpoint.example' });

      const minted = await http('POST', '/api-keys', { secret, json: { name: 'made by support', scopes: ['outreach:write'] } });
      expect(minted.status).toBe(201);
      expect(minted.body).toMatchObject({ created_by_member_id: owner.memberId, impersonated_by: 'support@touchpoint.example' });

      const smuggled = await http('POST', '/api-keys', { secret: owner.secret, json: { name: 'x', scopes: ['outreach:write'], impersonated_by: null } });
      expect([smuggled.status, smuggled.body.error.code]).toEqual([400, 'validation_failed']);
      const own = await http('POST', '/api-keys', { secret: owner.secret, json: { name: 'own', scopes: ['outreach:write'] } });
      expect(own.body.impersonated_by).toBeNull();
    });
  });
});
