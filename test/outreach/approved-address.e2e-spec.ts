import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type ContactView } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { aConnectedMailbox, anEnrollment, aPendingDraft, createCampaign, createTestWorld, eventually, type TestWorld, untilServicesAnswer } from '@touchpoint/testing';
import { ApiKeysModule } from '../../apps/gateway/src/api-keys/api-keys.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingRoutesModule } from '../../apps/gateway/src/messaging/messaging-routes.module.js';
import { OrganizationsModule } from '../../apps/gateway/src/organizations/organizations.module.js';
import { OutreachRoutesModule } from '../../apps/gateway/src/outreach/outreach.module.js';
import { SandboxHandle } from '../outbox/harness.js';
import { gatewayBuilders, httpClient } from '../gateway/gateway-world.js';
import { startOutreachToSandbox } from './outreach-world.js';

type NylasCall = { operation: string; context: Record<string, string>; body: { to?: { email: string }[]; body?: string } };

/**
 * An approved outreach email reaches the wire at the address the reviewer approved and nowhere else
 * (seed 003 §4.5: `to` is frozen; §4.6: execution sends to it, and invalidates the action when the
 * person's current address differs). Approvals go through the gateway; the person's email is
 * edited through the gateway; what counts is what the sandbox's Nylas received.
 */
describe('outreach sends to the approved address only', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let rpc: RpcClient;
  let http: ReturnType<typeof httpClient>;
  let org: string;
  let secret: string;
  let senderId: string;

  beforeAll(async () => {
    world = await createTestWorld('outreach_approved_to');
    sandbox = await SandboxHandle.start();
    // A long RPC deadline: the race below holds the recheck's suppression read for a moment. One
    // runner loop and a larger pool: while a test holds workflow_runs, the blocked loop and consumer
    // must leave connections for the approve RPC.
    const outreach = await startOutreachToSandbox(world, sandbox, { RPC_TIMEOUT_MS: '30000', OUTREACH_RUNNER_CONCURRENCY: '1', DB_POOL_SIZE: '8' });
    rpc = outreach.get(RpcClient);
    const gatewayConfig = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(gatewayConfig, [OrganizationsModule, ApiKeysModule, OutreachRoutesModule, MessagingRoutesModule]), gatewayStartOptions(gatewayConfig));
    http = httpClient((await gateway.getUrl()).replace('[::1]', '127.0.0.1'));
    await untilServicesAnswer(rpc, ['messaging', 'outbox-dispatcher', 'ai-gateway', 'outreach']);
    const seeded = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['outreach:read', 'outreach:write', 'messaging:read', 'messaging:write'], role: 'operator' });
    org = seeded.organizationId;
    secret = seeded.secret;
    ({ senderId } = await aConnectedMailbox(rpc, sandbox, org));
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const outreachTable = (table: string) => `"${world.schema('outreach')}".${table}`;
  const action = async (id: string) => (await world.sql<Record<string, unknown>>(`SELECT * FROM ${outreachTable('proposed_actions')} WHERE id = $1`, [id]))[0]!;
  const sendsTo = async (...addresses: string[]) => {
    const { calls } = await sandbox.get<{ calls: NylasCall[] }>('/sandbox/control/nylas/received');
    return calls.filter((c) => c.operation === 'send' && (c.body.to ?? []).some((t) => addresses.includes(t.email)));
  };
  /** A person enrolled and drafted by the real decision runner (sandbox model): a pending email. */
  const drafted = async () => {
    const campaign = await createCampaign(rpc, org, { email_sender_id: senderId });
    const { enrollmentId, person } = await anEnrollment(rpc, org, campaign.id);
    return { person, actionId: (await aPendingDraft(world, enrollmentId)).id as string };
  };
  const approve = (actionId: string) => http('POST', `/agentic/outreach/actions/${actionId}/approve`, { secret, json: {} });
  const changeEmail = async (person: ContactView) => {
    const email = `sarah.new.${randomUUID().slice(0, 8)}@acme.example`;
    const res = await http('PATCH', `/contacts/${person.id}`, { secret, json: { email } });
    expect(res.status).toBe(200);
    return email;
  };

  /** Holds an ACCESS EXCLUSIVE lock on `table` until `release()`; `waited()` resolves once another session waits for it. */
  const holdLock = async (table: string) => {
    const client = new pg.Client({ connectionString: world.databaseUrl });
    await client.connect();
    await client.query('BEGIN');
    await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    return {
      waited: () =>
        eventually(
          async () => {
            const rows = await world.sql(`SELECT 1 FROM pg_locks WHERE NOT granted AND relation = $1::regclass`, [table]);
            return rows.length > 0 || null;
          },
          20_000,
          20,
        ),
      release: async () => {
        await client.query('COMMIT');
        await client.end();
      },
    };
  };

  it('sends to the approved address when the email is edited after the recheck read it: the claim closes the gap', async () => {
    const { person, actionId } = await drafted();
    // The recheck reads the person, then asks the dispatcher about suppressions: that read waits here.
    const lock = await holdLock(`"${world.schema('outbox-dispatcher')}".contact_suppressions`);
    let edited: string;
    try {
      const approved = await approve(actionId);
      expect(approved.status).toBe(200);
      expect(approved.body.approved_payload.to).toBe(person.email);
      await lock.waited();
      edited = await changeEmail(person);
    } finally {
      await lock.release();
    }

    const executed = await eventually(async () => ((await action(actionId)).status === 'executed' ? action(actionId) : null), 30_000);
    const sends = await sendsTo(person.email!, edited!);
    expect(sends.map((s) => s.body.to!.map((t) => t.email))).toEqual([[person.email]]);
    expect(executed.provider_message_id).not.toBeNull();
  }, 120_000);

  it('invalidates the approval and sends nothing when the email is edited before execution rechecks it', async () => {
    const { person, actionId } = await drafted();
    // The approved event cannot start its execution run while this lock is held.
    const lock = await holdLock(outreachTable('workflow_runs'));
    let edited: string;
    try {
      const approved = await approve(actionId);
      expect(approved.status).toBe(200);
      edited = await changeEmail(person);
    } finally {
      await lock.release();
    }

    const settled = await eventually(async () => ((await action(actionId)).status === 'invalidated' ? action(actionId) : null), 30_000);
    expect(settled.invalidated_reason).toBe('recipient_changed');
    expect(await sendsTo(person.email!, edited!)).toEqual([]);
    expect(await world.sql(`SELECT 1 FROM "${world.schema('messaging')}".messages WHERE idempotency_key = $1`, [`outreach:${actionId}`])).toEqual([]);
  }, 120_000);
});
