import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { type ContactView, MessagingRpc, OutboxAccountRpc, PlatformRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { ApiKeysModule } from '../../apps/gateway/src/api-keys/api-keys.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { OrganizationsModule } from '../../apps/gateway/src/organizations/organizations.module.js';
import { OutreachRoutesModule } from '../../apps/gateway/src/outreach/outreach.module.js';
import { gatewayBuilders, httpClient } from '../gateway/gateway-world.js';
import { SandboxHandle } from '../outbox/harness.js';
import { startOutreachToSandbox } from './outreach-world.js';

/**
 * The organization's daily prospect cap as an outreach setting (seed 003 §6: 30 prospect emails
 * per mailbox and UTC day unless the organization overrides it; 0 stops every prospect send),
 * black-box through the gateway (`/agentic/outreach/settings/prospect-cap`, admin scope to change
 * it) and the admin CLI, against the real outbox-dispatcher that enforces it.
 */
describe('the prospect cap setting', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let outreach: NestFastifyApplication;
  let rpc: RpcClient;
  let http: ReturnType<typeof httpClient>;
  let builders: ReturnType<typeof gatewayBuilders>;

  beforeAll(async () => {
    world = await createTestWorld('outreach_prospect_cap');
    sandbox = await SandboxHandle.start();
    outreach = await startOutreachToSandbox(world, sandbox);
    rpc = outreach.get(RpcClient);
    const config = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(config, [OrganizationsModule, ApiKeysModule, OutreachRoutesModule]), gatewayStartOptions(config));
    http = httpClient((await gateway.getUrl()).replace('[::1]', '127.0.0.1'));
    builders = gatewayBuilders(gateway);
    for (const service of ['messaging', 'outbox-dispatcher', 'outreach'] as const) await eventually(() => rpc.call(service, PlatformRpc.Ping, {}, 2000), 20_000, 200);
  }, 120_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const capRow = async (org: string) => (await world.sql(`SELECT prospect_emails_per_day FROM "${world.schema('outbox-dispatcher')}".prospect_cap_settings WHERE organization_id = $1`, [org]))[0];
  const route = '/agentic/outreach/settings/prospect-cap';

  it('reads the default, refuses a key without the admin scope (403) and bad values (400, nothing written), and sets 0, which stops a prospect send', async () => {
    const admin = await builders.organizationWithKey({ scopes: ['admin', 'outreach:read'] });
    const operator = await builders.organizationWithKey({ organizationId: admin.organizationId, role: 'operator', scopes: ['outreach:read', 'outreach:write'], email: `op.${randomUUID().slice(0, 6)}@example.com` });
    const org = admin.organizationId;

    const initial = await http('GET', route, { secret: operator.secret });
    expect([initial.status, initial.body]).toEqual([200, { organization_id: org, prospect_emails_per_day: 30, is_default: true }]);

    const forbidden = await http('PUT', route, { secret: operator.secret, json: { prospect_emails_per_day: 0 } });
    expect([forbidden.status, forbidden.body.error.code]).toEqual([403, 'forbidden']);
    for (const bad of [{ prospect_emails_per_day: -1 }, { prospect_emails_per_day: 1.5 }, { prospect_emails_per_day: '5' }, { prospect_emails_per_day: 100_001 }, {}]) {
      const res = await http('PUT', route, { secret: admin.secret, json: bad });
      expect([res.status, res.body.error.code]).toEqual([400, 'validation_failed']);
    }
    expect(await capRow(org)).toBeUndefined();

    const stopped = await http('PUT', route, { secret: admin.secret, json: { prospect_emails_per_day: 0 } });
    expect([stopped.status, stopped.body]).toEqual([200, { organization_id: org, prospect_emails_per_day: 0, is_default: false }]);
    expect((await http('GET', route, { secret: operator.secret })).body).toEqual({ organization_id: org, prospect_emails_per_day: 0, is_default: false });

    // 0 stops every prospect send: the dispatcher's own check (the rule its send-time claim applies) refuses a prospect now.
    const grant = `grant-cap-${randomUUID()}`;
    await sandbox.post('/sandbox/nylas/grants', { grant_id: grant, api_key: 'nylas-key', email: 'sales@ours.example', provider: 'google' });
    await rpc.call('outbox-dispatcher', OutboxAccountRpc.Create, { organization_id: org, channel: 'email', account_id: grant, address: 'sales@ours.example', api_key: 'nylas-key', provider: 'google' });
    const person = await rpc.callUnchecked<ContactView>('messaging', MessagingRpc.ContactCreate, { organization_id: org, kind: 'prospect', name: 'Sarah Lee', email: `sarah.${randomUUID().slice(0, 8)}@acme.example` });
    expect(await rpc.call('outbox-dispatcher', OutboxAccountRpc.ProspectCapCheck, { organization_id: org, to: person.email! })).toMatchObject({ allowed: false, prospect: true, cap: 0 });

    const restored = await http('PUT', route, { secret: admin.secret, json: { prospect_emails_per_day: null } });
    expect([restored.status, restored.body]).toEqual([200, { organization_id: org, prospect_emails_per_day: 30, is_default: true }]);
    expect(await capRow(org)).toBeUndefined();
  }, 60_000);

  it('is set and read from the admin CLI (outreach:prospect-cap:set / get), and a bad --per-day exits 1', async () => {
    const { organizationId: org } = await builders.organizationWithKey({ scopes: ['admin'] });
    const cli = async (args: string[]) => {
      const child = spawn('npm', ['run', '-s', 'cli', '--', ...args, '--json'], { env: { ...process.env, ...world.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, json: JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null') };
    };
    const set = await cli(['outreach:prospect-cap:set', '--org', org, '--per-day', '12']);
    expect([set.code, set.json]).toEqual([0, { organization_id: org, prospect_emails_per_day: 12, is_default: false }]);
    expect(await capRow(org)).toEqual({ prospect_emails_per_day: 12 });
    const bad = await cli(['outreach:prospect-cap:set', '--org', org, '--per-day', '-3']);
    expect([bad.code, bad.json.error.code]).toEqual([1, 'validation_failed']);
    const got = await cli(['outreach:prospect-cap:get', '--org', org]);
    expect([got.code, got.json]).toEqual([0, { organization_id: org, prospect_emails_per_day: 12, is_default: false }]);
    // Each command is a fresh process (TypeScript compiled on start): many seconds apiece on a busy machine.
  }, 400_000);
});
