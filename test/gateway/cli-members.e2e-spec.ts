import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { ErrorEnvelope } from '@touchpoint/errors';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, gatewayTable, httpClient } from './gateway-world.js';

/** Runs `npm run -s cli -- <args> --json` in the world's environment. */
async function cli<T = unknown>(world: TestWorld, args: string[]): Promise<{ code: number | null; json: T }> {
  const child = spawn('npm', ['run', '-s', 'cli', '--', ...args, '--json'], { env: { ...process.env, ...world.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'ignore'] });
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, json: JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null') };
}

/** The admin CLI's member removal and impersonation keys, against a running gateway (DESIGN §3, §8). */
describe('admin CLI: members and impersonation keys', () => {
  let world: TestWorld;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;

  beforeAll(async () => {
    world = await createTestWorld('cli_members');
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
  });
  afterAll(() => world.close());

  it('member:remove takes the member out and their keys answer 401 at once; an unknown member fails with exit code 1', async () => {
    const build = gatewayBuilders(gateway);
    const admin = await build.organizationWithKey({ scopes: ['admin'] });
    const leaver = await build.organizationWithKey({ organizationId: admin.organizationId, role: 'admin', scopes: ['admin'], email: 'leaver@example.com' });
    expect((await http('GET', '/api-keys', { secret: leaver.secret })).status).toBe(200);

    const removed = await cli(world, ['member:remove', '--org', admin.organizationId, '--member', leaver.memberId]);

    expect(removed.code).toBe(0);
    expect(removed.json).toEqual({ id: leaver.memberId, organization_id: admin.organizationId, email: 'leaver@example.com', active: false, revoked_api_key_ids: [leaver.apiKeyId] });
    const after = await http('GET', '/api-keys', { secret: leaver.secret });
    expect([after.status, after.body.error.code]).toEqual([401, 'unauthorized']);
    expect((await http('GET', '/api-keys', { secret: admin.secret })).status).toBe(200);

    const unknown = await cli<ErrorEnvelope>(world, ['member:remove', '--org', admin.organizationId, '--member', randomUUID()]);
    expect([unknown.code, unknown.json.error.code]).toEqual([1, 'not_found']);
  }, 120_000);

  it('apikey:create --impersonated-by issues a key marked as an impersonated session', async () => {
    const build = gatewayBuilders(gateway);
    const admin = await build.organizationWithKey({ scopes: ['admin'] });

    const key = await cli<{ id: string }>(world, ['apikey:create', '--org', admin.organizationId, '--member', admin.memberId, '--scopes', 'outreach:write', '--impersonated-by', 'support@touchpoint.example']);

    expect(key.code).toBe(0);
    expect(key.json).toMatchObject({ scopes: ['outreach:write'], impersonated_by: 'support@touchpoint.example' });
    const [row] = await world.sql<{ impersonated_by: string | null; created_by_member_id: string }>(`SELECT impersonated_by, created_by_member_id FROM ${gatewayTable(world, 'api_keys')} WHERE id = $1`, [key.json.id]);
    expect(row).toEqual({ impersonated_by: 'support@touchpoint.example', created_by_member_id: admin.memberId });
    const listed = await http('GET', '/api-keys', { secret: admin.secret });
    expect(listed.body.items.find((k: { id: string }) => k.id === key.json.id)).toMatchObject({ impersonated_by: 'support@touchpoint.example' });
  }, 120_000);
});
