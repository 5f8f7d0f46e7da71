import { randomUUID } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { type ActionView, type DraftPayload, MessagingRpc, OutboxAccountRpc, OutreachRpc } from '@touchpoint/contracts';
import { AppError, httpStatusOf } from '@touchpoint/errors';
import { RpcClient } from '@touchpoint/runtime';
import { aConnectedMailbox, anEnrollment, aPendingDraft, createCampaign, createTestWorld, eventually, type TestWorld, untilServicesAnswer } from '@touchpoint/testing';
import { nextUtcMidnight } from '../../apps/outreach/src/execution/outcomes.consumer.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { NylasWebhookModule } from '../../apps/gateway/src/webhooks/nylas/nylas-webhook.module.js';
import { SandboxHandle } from '../outbox/harness.js';
import { startOutreachToSandbox } from './outreach-world.js';

/**
 * An approved outreach email goes out for real: outreach → messaging.send → the dispatcher's Nylas
 * adapter → the Nylas sandbox, and the outcome comes back to the action (seed 003
 * §4.6). With the organization's prospect cap at 0, the same send is refused before the wire and the
 * action is held until the next 00:00 UTC (seed 003 §6).
 */
describe('outreach email through the dispatcher to Nylas', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let outreach: NestFastifyApplication;
  let rpc: RpcClient;
  const org = `org-${randomUUID()}`;
  let senderId: string;
  let grant: string;

  beforeAll(async () => {
    world = await createTestWorld('outreach_nylas');
    sandbox = await SandboxHandle.start();
    outreach = await startOutreachToSandbox(world, sandbox);
    rpc = outreach.get(RpcClient);
    const gatewayConfig = world.config(GatewayConfig, { NYLAS_WEBHOOK_SECRET: 'e2e-nylas-secret' });
    const gateway = await world.start(GatewayModule.forRoot(gatewayConfig, [NylasWebhookModule]), gatewayStartOptions(gatewayConfig));
    await sandbox.post('/sandbox/nylas/settings', { webhook_url: `${(await gateway.getUrl()).replace('[::1]', '127.0.0.1')}/webhooks/nylas`, webhook_secret: 'e2e-nylas-secret' });
    await untilServicesAnswer(rpc, ['messaging', 'outbox-dispatcher', 'ai-gateway', 'outreach']);
    ({ senderId, grant } = await aConnectedMailbox(rpc, sandbox, org));
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const schema = () => world.schema('outreach');
  const action = async (id: string) => (await world.sql<Record<string, unknown> & { next_attempt_at: Date }>(`SELECT * FROM "${schema()}".proposed_actions WHERE id = $1`, [id]))[0]!;
  const drafted = async () => {
    const campaign = await createCampaign(rpc, org, { email_sender_id: senderId });
    const { enrollmentId, person } = await anEnrollment(rpc, org, campaign.id);
    return { person, enrollmentId, actionId: (await aPendingDraft(world, enrollmentId)).id as string };
  };
  const approve = (actionId: string, payload?: DraftPayload) => rpc.callUnchecked<ActionView>('outreach', OutreachRpc.ActionApprove, { organization_id: org, action_id: actionId, actor: { member_id: 'member-1' }, payload });

  it('sends the approved email through Nylas with the unsubscribe line and records it executed', async () => {
    const { person, enrollmentId, actionId } = await drafted();
    const approved = await approve(actionId);
    const executed = await eventually(async () => ((await action(actionId)).status === 'executed' ? action(actionId) : null), 30_000);
    const { calls } = await sandbox.get<{ calls: { operation: string; context: Record<string, string>; body: { subject?: string; body: string; custom_headers?: unknown }; provider_id?: string }[] }>('/sandbox/control/nylas/received');
    const sends = calls.filter((c) => c.operation === 'send' && c.context.to === person.email);
    expect(sends).toHaveLength(1);
    expect(sends[0]!.body.subject).toBe((approved.approved_payload as { subject: string }).subject);
    expect(sends[0]!.body.body).toContain('Unsubscribe: https://touchpoint.example/nylas/email/unsubscribe?token=');
    expect(sends[0]!.body.custom_headers).toEqual(expect.arrayContaining([{ name: 'List-Unsubscribe-Post', value: 'List-Unsubscribe=One-Click' }]));
    expect(executed.provider_message_id).toBe(sends[0]!.provider_id);
    const [enrollment] = await world.sql<Record<string, unknown>>(`SELECT * FROM "${schema()}".enrollments WHERE id = $1`, [enrollmentId]);
    expect(enrollment!.touch_count).toBe(1);
  }, 120_000);

  it('sends an approved email whose body is longer than a WhatsApp text (4,600 code points, emoji among them): email has its own limit', async () => {
    const { person, actionId } = await drafted();
    // 4,600 code points, 4,800 UTF-16 units: over WhatsApp's 4,096, under the email draft limit (5,000).
    const body = `${'Uma frase longa sobre cadeiras de escritório. '.repeat(100)}`.slice(0, 4400) + '\u{1F600}'.repeat(200);
    expect([...body]).toHaveLength(4600);
    const approved = await approve(actionId, { body });
    expect((approved.approved_payload as { body: string }).body).toBe(body);
    const executed = await eventually(async () => {
      const row = await action(actionId);
      if (row.status === 'failed') throw new Error(`the action failed: ${String(row.failure_reason)}`);
      return row.status === 'executed' ? row : null;
    }, 30_000);
    const { calls } = await sandbox.get<{ calls: { operation: string; context: Record<string, string>; body: { body: string }; provider_id?: string }[] }>('/sandbox/control/nylas/received');
    const sends = calls.filter((c) => c.operation === 'send' && c.context.to === person.email);
    expect(sends).toHaveLength(1);
    expect(sends[0]!.body.body.startsWith(body)).toBe(true);
    expect(executed.provider_message_id).toBe(sends[0]!.provider_id);
  }, 120_000);

  it('a reply through the signed Nylas webhooks (updated before created, created redelivered) interrupts once; an out-of-office whose headers only the GET shows interrupts nothing', async () => {
    const { person, enrollmentId, actionId } = await drafted();
    await approve(actionId);
    const sent = await eventually(async () => ((await action(actionId)).status === 'executed' ? action(actionId) : null), 30_000);
    const before = (await world.sql<Record<string, unknown>>(`SELECT * FROM "${schema()}".enrollments WHERE id = $1`, [enrollmentId]))[0]!;

    // An out-of-office: the notification carries no headers; outreach reads them with one Nylas GET.
    const ooo = await sandbox.post<{ message: { id: string }; deliveries: { status: number }[] }>('/sandbox/nylas/inbound', {
      grant_id: grant,
      from: person.email,
      subject: 'Re: your note',
      body: 'I am away until Monday.',
      headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }],
      reply_to_message_id: sent.provider_message_id,
    });
    expect(ooo.deliveries.map((d) => d.status)).toEqual([200]);
    const oooRow = await eventually(async () => (await world.sql<Record<string, unknown>>(`SELECT id FROM "${world.schema('messaging')}".messages WHERE external_id = $1`, [ooo.message.id]))[0], 30_000);
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema()}".inbox_events WHERE event_id = $1`, [`messaging.message.received:${oooRow.id}`]))[0], 30_000);
    const { calls } = await sandbox.get<{ calls: { operation: string; context: Record<string, string> }[] }>('/sandbox/control/nylas/received');
    expect(calls.filter((c) => c.operation === 'read' && c.context.message_id === ooo.message.id && c.context.fields === 'include_headers')).toHaveLength(1);
    expect((await world.sql<Record<string, unknown>>(`SELECT context_version FROM "${schema()}".enrollments WHERE id = $1`, [enrollmentId]))[0]!.context_version).toBe(before.context_version);

    // A real reply, its notifications out of order and redelivered.
    const reply = await sandbox.post<{ message: { id: string }; deliveries: { status: number; body: string }[] }>('/sandbox/nylas/inbound', {
      grant_id: grant,
      from: person.email,
      body: '<div>Yes, Tuesday at 10 works.</div>',
      reply_to_message_id: sent.provider_message_id,
      types: ['message.updated', 'message.created', 'message.created'],
    });
    expect(reply.deliveries.map((d) => [d.status, JSON.parse(d.body).outcome])).toEqual([
      [200, 'stored'],
      [200, 'duplicate'],
      [200, 'duplicate'],
    ]);
    const replyRow = (await world.sql<Record<string, unknown>>(`SELECT id FROM "${world.schema('messaging')}".messages WHERE external_id = $1`, [reply.message.id]))[0]!;
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema()}".outbox_events WHERE event_id = $1`, [`reply:${replyRow.id}`]))[0], 30_000);
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema()}".decisions WHERE trigger_event_id = $1`, [`reply:${replyRow.id}`]))[0], 30_000);
    expect(await world.sql(`SELECT event_id FROM "${schema()}".outbox_events WHERE event_id LIKE 'reply:%' AND payload->'data'->>'enrollment_id' = $1`, [enrollmentId])).toHaveLength(1);
  }, 120_000);

  it('holds the action until the next 00:00 UTC when the prospect cap refuses the send (nothing reaches Nylas)', async () => {
    await rpc.call('outbox-dispatcher', OutboxAccountRpc.ProspectCapSet, { organization_id: org, prospect_emails_per_day: 0 });
    const { person, actionId } = await drafted();
    const before = Date.now();
    await approve(actionId);
    const held = await eventually(async () => {
      const row = await action(actionId);
      return row.status === 'approved' && row.failure_reason === 'prospect_send_cap_reached' ? row : null;
    }, 30_000);
    expect(new Date(held.next_attempt_at).toISOString()).toBe(nextUtcMidnight(new Date(before)).toISOString());
    const { calls } = await sandbox.get<{ calls: { operation: string; context: Record<string, string> }[] }>('/sandbox/control/nylas/received');
    expect(calls.filter((c) => c.operation === 'send' && c.context.to === person.email)).toEqual([]);

    // An interactive send to the same prospect answers prospect_send_cap_reached (429) at once, and writes nothing.
    const [conversation] = await world.sql<{ id: string }>(`SELECT id FROM "${world.schema('messaging')}".conversations WHERE contact_id = $1 AND channel = 'email'`, [person.id]);
    const refused = (await rpc.call('messaging', MessagingRpc.ConversationSend, { organization_id: org, conversation_id: conversation!.id, idempotency_key: 'op-cap-1', text: 'Hi Sarah, a quick note.', subject: 'Chairs' }).catch((e: unknown) => e)) as AppError;
    expect(refused).toBeInstanceOf(AppError);
    expect(refused.code).toBe('prospect_send_cap_reached');
    expect(httpStatusOf(refused.code)).toBe(429);
    expect(await world.sql(`SELECT id FROM "${world.schema('messaging')}".messages WHERE idempotency_key = 'operator:op-cap-1'`)).toEqual([]);

    // Back to the default cap: the same interactive send goes.
    await rpc.call('outbox-dispatcher', OutboxAccountRpc.ProspectCapSet, { organization_id: org, prospect_emails_per_day: null });
    const sent = await rpc.callUnchecked<{ message_id: string }>('messaging', MessagingRpc.ConversationSend, { organization_id: org, conversation_id: conversation!.id, idempotency_key: 'op-cap-1', text: 'Hi Sarah, a quick note.', subject: 'Chairs' });
    expect(sent.message_id).toEqual(expect.any(String));
  }, 120_000);
});
