import { randomUUID } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { type ActionView, type CampaignView, type ContactView, type EnrollBatchResult, MessagingRpc, OutboxAccountRpc, OutreachDispatcherRpc, OutreachRpc, PlatformRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { AiGatewayConfig } from '../../apps/ai-gateway/src/ai-gateway.config.js';
import { AiGatewayModule } from '../../apps/ai-gateway/src/ai-gateway.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { UnipileWebhookModule } from '../../apps/gateway/src/webhooks/unipile/unipile-webhook.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { OutreachConfig } from '../../apps/outreach/src/outreach.config.js';
import { OutreachModule } from '../../apps/outreach/src/outreach.module.js';
import { SandboxHandle } from '../outbox/harness.js';

const UNIPILE_SECRET = 'e2e-unipile-secret';

/**
 * LinkedIn end to end (seed 003 §4.6–§4.7): an approved invitation goes out through
 * the dispatcher's Unipile adapter; the person accepts (`new_relation` through the gateway) and the
 * enrollment gets an `invitation_accepted` decision; the approved chat message goes out; the
 * person's answer (`message_received` through the gateway) interrupts the enrollment.
 */
/** A proposed action as these tests read it (SELECT *): the columns they use typed, the rest `unknown`. */
type ActionRow = Record<string, unknown> & { id: string; draft_payload: { note?: string; body?: string } };

describe('outreach LinkedIn through the dispatcher to Unipile', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let outreach: NestFastifyApplication;
  let rpc: RpcClient;
  const org = `org-${randomUUID()}`;
  const account = `acct-${randomUUID()}`;
  let senderId: string;

  beforeAll(async () => {
    world = await createTestWorld('outreach_unipile');
    sandbox = await SandboxHandle.start();
    await world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig, { AI_BASE_URL: `${sandbox.url}/v1` })));
    await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
    await world.start(OutboxDispatcherModule.forRoot(world.config(OutboxDispatcherConfig, { NYLAS_API_BASE_URL: sandbox.url, UNIPILE_API_BASE_URL: sandbox.url, OUTBOX_SWEEP_INTERVAL_MS: '0', OUTBOX_IDLE_POLL_MS: '100' })));
    outreach = await world.start(OutreachModule.forRoot(world.config(OutreachConfig, { OUTREACH_RUNNER_POLL_MS: '50', OUTREACH_RUN_RETRY_BASE_MS: '100', OUTREACH_AI_TIMEOUT_MS: '5000', OUTREACH_SWEEP_INTERVAL_MS: '0' })));
    rpc = outreach.get(RpcClient);
    for (const service of ['messaging', 'outbox-dispatcher', 'ai-gateway', 'outreach'] as const) await eventually(() => rpc.call(service, PlatformRpc.Ping, {}, 2000), 20_000, 200);
    const gatewayConfig = world.config(GatewayConfig, { UNIPILE_WEBHOOK_SECRET: UNIPILE_SECRET });
    const gateway = await world.start(GatewayModule.forRoot(gatewayConfig, [UnipileWebhookModule]), gatewayStartOptions(gatewayConfig));
    await sandbox.post('/sandbox/unipile/settings', { webhook_url: `${(await gateway.getUrl()).replace('[::1]', '127.0.0.1')}/webhooks/unipile`, webhook_secret: UNIPILE_SECRET, account_users: { [account]: 'ACoAAOURSELVES' } });
    await sandbox.post('/sandbox/unipile/accounts', { account_id: account, api_key: 'unipile-key' });
    senderId = (await rpc.callUnchecked<{ id: string }>('outbox-dispatcher', OutboxAccountRpc.Create, { organization_id: org, channel: 'linkedin', account_id: account, address: 'ACoAAOURSELVES', api_key: 'unipile-key' })).id;
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const schema = () => world.schema('outreach');
  const rows = <T = ActionRow>(sql: string, params: unknown[]) => world.sql<T>(sql.replaceAll('{o}', `"${schema()}"`), params);
  const pendingOf = (enrollmentId: string) => eventually(async () => (await rows(`SELECT * FROM {o}.proposed_actions WHERE enrollment_id = $1 AND status = 'pending_approval'`, [enrollmentId]))[0], 30_000);
  const approve = (actionId: string) => rpc.callUnchecked<ActionView>('outreach', OutreachRpc.ActionApprove, { organization_id: org, action_id: actionId, actor: { member_id: 'member-1' } });
  const executed = (actionId: string) => eventually(async () => (await rows(`SELECT * FROM {o}.proposed_actions WHERE id = $1 AND status = 'executed'`, [actionId]))[0], 30_000);
  const unipile = async () => (await sandbox.get<{ calls: { operation: string; context: Record<string, string>; body: unknown; provider_id?: string }[] }>('/sandbox/control/unipile/received')).calls;

  it('invites with the note, learns the acceptance, messages, and the answer interrupts the enrollment', async () => {
    const campaign = await rpc.callUnchecked<CampaignView>('outreach', OutreachRpc.CampaignCreate, {
      organization_id: org,
      name: 'LinkedIn chairs',
      goal: 'Book a demo of the ergonomic chair line',
      allowed_channels: ['linkedin'],
      max_touches: 4,
      followup_min_days: 2,
      followup_max_days: 5,
      linkedin_sender_id: senderId,
    });
    const memberId = `ACoAAPERSON${randomUUID().slice(0, 6)}`;
    const person = await rpc.callUnchecked<ContactView>('messaging', MessagingRpc.ContactCreate, { organization_id: org, kind: 'prospect', name: 'Sarah Lee', linkedin_url: `https://www.linkedin.com/in/sarah-${memberId.slice(-6).toLowerCase()}/`, linkedin_provider_id: memberId });
    const enrolled = await rpc.callUnchecked<EnrollBatchResult>('outreach', OutreachRpc.EnrollBatch, { organization_id: org, campaign_id: campaign.id, people: [{ person_kind: 'prospect', person_id: person.id }] });
    const enrollmentId = (enrolled.results[0] as { enrollment_id: string }).enrollment_id;

    // 1 the invitation, with its note
    const invite = await pendingOf(enrollmentId);
    expect(invite).toMatchObject({ type: 'linkedin_connection' });
    await approve(invite.id);
    const sentInvite = await executed(invite.id);
    const inviteCall = (await unipile()).find((c) => c.operation === 'invite' && c.context.provider_id === memberId)!;
    expect(inviteCall.body).toMatchObject({ account_id: account, provider_id: memberId, message: invite.draft_payload.note });
    expect(sentInvite.provider_message_id).toBe(inviteCall.provider_id);
    const state = () => rpc.callUnchecked<{ state: string }>('outbox-dispatcher', OutreachDispatcherRpc.LinkedinState, { organization_id: org, sender_id: senderId, linkedin_url: person.linkedin_url, provider_id: memberId });
    expect((await state()).state).toBe('invited');

    // 2 accepted: new_relation through the gateway → connected → an invitation_accepted decision
    await sandbox.post('/sandbox/model/script', { steps: [{ reply: { type: 'linkedin_message', rationale: 'Sarah accepted the invitation.', objective: 'Thank Sarah for connecting and offer a short call.', goal_met: false, suggested_followup_days: 3 } }] });
    const accepted = await sandbox.post<{ delivery: { status: number } }>('/sandbox/unipile/accept', { account_id: account, provider_id: memberId });
    expect(accepted.delivery.status).toBe(200);
    expect((await state()).state).toBe('connected');
    await eventually(async () => (await rows(`SELECT * FROM {o}.decisions WHERE trigger_event_id = $1 AND outcome = 'saved'`, [`accepted:${invite.id}`]))[0], 30_000);
    const message = await pendingOf(enrollmentId);
    expect(message).toMatchObject({ type: 'linkedin_message' });

    // 3 the chat message
    await approve(message.id);
    const sentMessage = await executed(message.id);
    const chatCall = (await unipile()).find((c) => c.operation === 'chat' && c.context.provider_id === memberId)!;
    expect(chatCall.body).toMatchObject({ account_id: account, attendees_ids: memberId, text: message.draft_payload.body });
    expect(sentMessage.provider_message_id).toBe(chatCall.provider_id);

    // 4 the answer, through the gateway: stored, and the enrollment interrupted once
    const before = (await rows<{ context_version: number }>(`SELECT * FROM {o}.enrollments WHERE id = $1`, [enrollmentId]))[0]!;
    const answer = await sandbox.post<{ payload: { message_id: string }; delivery: { status: number; body: string } }>('/sandbox/unipile/inbound', { account_id: account, from_provider_id: memberId, text: 'Happy to talk on Tuesday!' });
    expect(answer.delivery.status).toBe(200);
    const [stored] = await world.sql<Record<string, unknown>>(`SELECT * FROM "${world.schema('messaging')}".messages WHERE external_id = $1`, [answer.payload.message_id]);
    expect(stored).toMatchObject({ channel: 'linkedin', direction: 'inbound', body: 'Happy to talk on Tuesday!' });
    await eventually(async () => (await rows(`SELECT 1 FROM {o}.outbox_events WHERE event_id = $1`, [`reply:${stored!.id}`]))[0], 30_000);
    expect((await rows<{ context_version: number }>(`SELECT context_version FROM {o}.enrollments WHERE id = $1`, [enrollmentId]))[0]!.context_version).toBeGreaterThan(before.context_version);
  }, 120_000);
});
