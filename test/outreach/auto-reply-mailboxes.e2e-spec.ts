import { randomUUID } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { type ActionView, type ContactView, MessagingRpc, OutreachRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { aConnectedMailbox, aFlow, anActiveFlow, anEnrollment, aPendingDraft, createCampaign, createTestWorld, eventually, HOUR, type TestWorld, textStep, untilServicesAnswer, waitStep } from '@touchpoint/testing';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { NylasWebhookModule } from '../../apps/gateway/src/webhooks/nylas/nylas-webhook.module.js';
import { startFollowups } from '../followups/followups-world.js';
import { SandboxHandle } from '../outbox/harness.js';
import { startOutreachToSandbox } from './outreach-world.js';

type Row = Record<string, unknown>;
/** Deadline of this file's RPCs, ms: late in the serial suite the process is busy, and 5 s was once too short. */
const RPC_MS = 20_000;
interface NylasCall {
  operation: string;
  outcome: string;
  context: Record<string, string>;
  body: unknown;
  provider_id?: string;
}

/** trigger → wait an hour → text → end, `cancel_on_reply`: a WhatsApp follow-up that a reply would stop. */
const WAITING_FLOW = aFlow({ steps: [waitStep('w', HOUR), textStep('a', 'Oi, conseguiu ver?')] });

/**
 * An auto-reply never stops, opts out or interrupts anything, on any mailbox (seed 003 §4.7),
 * through the real doors: the sandbox's Nylas fires signed webhooks at the gateway, messaging
 * stores and judges (libs/text `judgeInbound`, headers read with the grant of the mailbox the email
 * came to), and outreach and followups act on that one verdict. The organization has two
 * mailboxes; the campaign sends from the one that is NOT the default, and the sandbox, like Nylas,
 * answers 404 to a read of its messages with the default mailbox's grant.
 */
describe('auto-replies and the mailbox they arrive on', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let outreach: NestFastifyApplication;
  let followups: NestFastifyApplication;
  let rpc: RpcClient;
  const org = randomUUID(); // followups takes organization ids as uuids
  const defaultGrant = `grant-default-${randomUUID()}`;
  const campaignGrant = `grant-campaign-${randomUUID()}`;
  let campaignSenderId: string;
  let flowId: string;

  beforeAll(async () => {
    world = await createTestWorld('outreach_autoreply');
    sandbox = await SandboxHandle.start();
    outreach = await startOutreachToSandbox(world, sandbox);
    followups = await startFollowups(world);
    rpc = outreach.get(RpcClient);
    const gatewayConfig = world.config(GatewayConfig, { NYLAS_WEBHOOK_SECRET: 'e2e-nylas-secret' });
    const gateway = await world.start(GatewayModule.forRoot(gatewayConfig, [NylasWebhookModule]), gatewayStartOptions(gatewayConfig));
    await sandbox.post('/sandbox/nylas/settings', { webhook_url: `${(await gateway.getUrl()).replace('[::1]', '127.0.0.1')}/webhooks/nylas`, webhook_secret: 'e2e-nylas-secret' });
    await untilServicesAnswer(rpc, ['messaging', 'outbox-dispatcher', 'ai-gateway', 'outreach', 'followups']);
    // The first mailbox is the organization's default; the campaign sends from the second.
    await aConnectedMailbox(rpc, sandbox, org, { grant: defaultGrant, address: 'hello@ours.example' });
    ({ senderId: campaignSenderId } = await aConnectedMailbox(rpc, sandbox, org, { grant: campaignGrant }));
    const [def] = await world.sql<Row>(`SELECT is_default FROM "${world.schema('outbox-dispatcher')}".senders WHERE provider_account_id = $1`, [defaultGrant]);
    expect(def!.is_default).toBe(true);

    flowId = await anActiveFlow(followups.get(FlowsService), org, { name: 'Retomada', ...WAITING_FLOW });
  }, 120_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const o = () => world.schema('outreach');
  const m = () => world.schema('messaging');
  const fu = () => world.schema('followups');
  const action = async (id: string) => (await world.sql<Row>(`SELECT * FROM "${o()}".proposed_actions WHERE id = $1`, [id]))[0]!;
  const enrollment = async (id: string) => (await world.sql<Row & { context_version: number }>(`SELECT * FROM "${o()}".enrollments WHERE id = $1`, [id]))[0]!;
  const nylasCalls = async () => (await sandbox.get<{ calls: NylasCall[] }>('/sandbox/control/nylas/received')).calls;
  const replyEvents = (enrollmentId: string) => world.sql<Row>(`SELECT event_id FROM "${o()}".outbox_events WHERE event_id LIKE 'reply:%' AND payload->'data'->>'enrollment_id' = $1`, [enrollmentId]);

  /**
   * A prospect (email and WhatsApp phone) enrolled in the campaign, whose first email went out
   * from the campaign's mailbox and was approved by a person; and the same contact waiting in a
   * WhatsApp follow-up flow that stops on a reply.
   */
  async function emailed() {
    const campaign = await createCampaign(rpc, org, { email_sender_id: campaignSenderId }, RPC_MS);
    const phone = `+55119${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;
    const { enrollmentId, person } = await anEnrollment(rpc, org, campaign.id, { phone }, RPC_MS);
    const pending = await aPendingDraft(world, enrollmentId);
    await rpc.callUnchecked<ActionView>('outreach', OutreachRpc.ActionApprove, { organization_id: org, action_id: pending!.id, actor: { member_id: 'member-1' } }, RPC_MS);
    const sent = await eventually(async () => ((await action(pending!.id)).status === 'executed' ? action(pending!.id) : null), 30_000);
    const send = (await nylasCalls()).find((c) => c.operation === 'send' && c.provider_id === sent.provider_message_id);
    expect(send?.context.grant_id).toBe(campaignGrant);

    await eventually(async () => (await world.sql(`SELECT 1 FROM "${fu()}".contacts WHERE contact_id = $1`, [person.id])).length === 1, 20_000);
    const followup = (await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: flowId, contact_id: person.id, operation_key: randomUUID() })).enrollment;
    expect(followup.status).toBe('active');
    return { person, enrollmentId, sentId: sent.provider_message_id as string, followupId: followup.id as string, before: await enrollment(enrollmentId) };
  }

  /** The person answers by email on the campaign's mailbox; resolves once outreach and followups consumed messaging's event. */
  async function answer(person: ContactView, inReplyTo: string, email: { subject?: string; body: string; headers?: { name: string; value: string }[] }) {
    const posted = await sandbox.post<{ message: { id: string }; deliveries: { status: number; body: string }[] }>('/sandbox/nylas/inbound', { grant_id: campaignGrant, from: person.email, reply_to_message_id: inReplyTo, ...email });
    expect(posted.deliveries.map((d) => d.status)).toEqual([200]);
    const [row] = await world.sql<Row>(`SELECT id, auto_reply, opt_out FROM "${m()}".messages WHERE external_id = $1`, [posted.message.id]);
    const eventId = `messaging.message.received:${row!.id}`;
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${o()}".inbox_events WHERE event_id = $1`, [eventId]))[0], 30_000);
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${fu()}".inbox_events WHERE event_id = $1`, [eventId]))[0], 30_000);
    return { nylasId: posted.message.id, message: row! };
  }

  /** Nothing the auto-reply could have stopped was stopped, in any service, and nothing was suppressed. */
  async function expectUntouched(s: Awaited<ReturnType<typeof emailed>>) {
    const contact = await rpc.callUnchecked<ContactView>('messaging', MessagingRpc.ContactGet, { organization_id: org, contact_id: s.person.id }, RPC_MS);
    expect(contact).toMatchObject({ opted_out_at: null, kind: 'prospect' });
    expect(await world.sql(`SELECT type FROM "${m()}".outbox_events WHERE type IN ('messaging.contact.opted_out', 'messaging.suppression.requested') AND payload->'data'->>'contact_id' = $1`, [s.person.id])).toEqual([]);
    expect(await world.sql(`SELECT value FROM "${world.schema('outbox-dispatcher')}".contact_suppressions WHERE organization_id = $1 AND value IN ($2, $3)`, [org, s.person.email!.toLowerCase(), s.person.phone])).toEqual([]);
    const [flowEnrollment] = await world.sql<Row>(`SELECT status FROM "${fu()}".enrollments WHERE id = $1`, [s.followupId]);
    expect(flowEnrollment!.status).toBe('active');
    const after = await enrollment(s.enrollmentId);
    expect(after).toMatchObject({ status: 'active', context_version: s.before.context_version, person_kind: 'prospect' });
    expect(await replyEvents(s.enrollmentId)).toEqual([]);
  }

  const unsubscribeFooter = '\n\nYou received this automatic notice. To unsubscribe from these notices, reply UNSUBSCRIBE.';

  it.each([
    ['Auto-Submitted header, English, "unsubscribe" in it', { subject: 'Re: your note', body: `I am away until Monday.${unsubscribeFooter}`, headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }] }],
    ['Auto-Submitted header only, no opt-out words', { subject: 'Re: your note', body: 'I am away until Monday, with limited access to email.', headers: [{ name: 'Auto-Submitted', value: 'auto-generated' }] }],
    ['X-Autoreply header, Portuguese, "descadastrar" in it', { subject: 'Re: Cadeiras', body: 'Estou de férias até segunda. Para sair da lista, clique em descadastrar.', headers: [{ name: 'X-Autoreply', value: 'yes' }] }],
    ['Precedence: auto_reply header, Spanish, "darme de baja" in it', { subject: 'RE: Sillas', body: 'Estoy fuera de la oficina. Para darme de baja de estos avisos, responda BAJA.', headers: [{ name: 'Precedence', value: 'auto_reply' }] }],
    ['subject only, English, "unsubscribe" in it', { subject: 'Automatic reply: your note', body: `Back on the 3rd.${unsubscribeFooter}` }],
    ['subject only, Portuguese, "unsubscribe" in it', { subject: 'Resposta automática: Cadeiras', body: 'Volto dia 3. unsubscribe' }],
    ['subject only, Spanish, "Unsubscribe" in it', { subject: 'Respuesta automática: Sillas', body: 'Vuelvo el lunes. Unsubscribe.' }],
  ] as [string, { subject: string; body: string; headers?: { name: string; value: string }[] }][])(
    "an out-of-office on the campaign's non-default mailbox (%s) opts nobody out, stops no follow-up and interrupts nothing",
    async (_label, email) => {
      const s = await emailed();
      const { nylasId, message } = await answer(s.person, s.sentId, email);
      expect(message).toMatchObject({ auto_reply: true, opt_out: false });
      await expectUntouched(s);
      // The headers were read once, with the grant of the mailbox the email came to; never with the default's.
      const reads = (await nylasCalls()).filter((c) => c.operation === 'read' && c.context.message_id === nylasId);
      if (email.headers) expect(reads.map((r) => [r.context.grant_id, r.context.fields, r.outcome])).toEqual([[campaignGrant, 'include_headers', 'accepted']]);
      expect(reads.filter((r) => r.context.grant_id === defaultGrant)).toEqual([]);
    },
    120_000,
  );

  it('reads the headers again when Nylas fails twice, and the out-of-office still starts nothing', async () => {
    const s = await emailed();
    await sandbox.post('/sandbox/control/nylas/faults', { faults: [{ kind: 'error', status: 503, times: 2, match: { operation: 'read', from: s.person.email } }] });
    const { nylasId, message } = await answer(s.person, s.sentId, { subject: 'Re: your note', body: `Away this week.${unsubscribeFooter}`, headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }] });
    expect((await nylasCalls()).filter((c) => c.operation === 'read' && c.context.message_id === nylasId).map((c) => c.outcome)).toEqual(['error_503', 'error_503', 'accepted']);
    expect(message).toMatchObject({ auto_reply: true, opt_out: false });
    await expectUntouched(s);
  }, 120_000);

  it('a human reply on the same mailbox interrupts the enrollment and stops the follow-up (the rule is not simply "nothing")', async () => {
    const s = await emailed();
    const { message } = await answer(s.person, s.sentId, { subject: 'Re: your note', body: '<div>Yes, Tuesday at 10 works.</div>' });
    expect(message).toMatchObject({ auto_reply: false, opt_out: false });
    await eventually(async () => (await replyEvents(s.enrollmentId)).length === 1, 30_000);
    // The interrupt moves the version on; the decision it wakes may move it again before we look.
    const after = await enrollment(s.enrollmentId);
    expect(after.context_version).toBeGreaterThan(s.before.context_version);
    expect(after.person_kind).toBe('crm');
    await eventually(async () => (await world.sql<Row>(`SELECT status FROM "${fu()}".enrollments WHERE id = $1`, [s.followupId]))[0]!.status !== 'active', 30_000);
  }, 120_000);

  it('when the headers stay unreadable, an email is judged by its subject, interrupts (the reply wins) but promotes nobody', async () => {
    const s = await emailed();
    await sandbox.post('/sandbox/control/nylas/faults', { faults: [{ kind: 'error', status: 503, times: 3, match: { operation: 'read', from: s.person.email } }] });
    const { nylasId, message } = await answer(s.person, s.sentId, { subject: 'Re: your note', body: 'Away this week.', headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }] });
    expect((await nylasCalls()).filter((c) => c.operation === 'read' && c.context.message_id === nylasId).map((c) => c.outcome)).toEqual(['error_503', 'error_503', 'error_503']);
    expect(message).toMatchObject({ auto_reply: false, opt_out: false });
    const [event] = await world.sql<{ payload: { data: unknown } }>(`SELECT payload FROM "${m()}".outbox_events WHERE event_id = $1`, [`messaging.message.received:${message.id}`]);
    expect(event!.payload.data).toMatchObject({ auto_reply: false, opt_out: false, judgement_certain: false });
    await eventually(async () => (await replyEvents(s.enrollmentId)).length === 1, 30_000);
    // The interrupt moves the version on; the decision it wakes may move it again before we look.
    const after = await enrollment(s.enrollmentId);
    expect(after.context_version).toBeGreaterThan(s.before.context_version);
    expect(after.person_kind).toBe('prospect');
  }, 120_000);
});
