import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { type FlowGraph, type FlowSettings, MessagingEvents, SEED_002_FLOW_EXAMPLE } from '@touchpoint/contracts';
import { aFlow, anActiveFlow, aProvisionedNumber, createTestWorld, eventually, lastWeekdayMorning, publishEvent, type TestWorld, aMessageReceived } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, setLimits } from '../messaging/helpers.js';
import { type Dispatcher, SandboxHandle } from '../outbox/harness.js';
import { startFollowupsWithSendPath } from './followups-world.js';

type Row = Record<string, unknown>;
/** A row as these tests read it: the columns they use typed, every other column `unknown`. */
type EffectRow = Row & { idempotency_key: string };

/** Waits for a fact across several services on a busy machine (up to 30 s). */
const soon = <T>(probe: () => Promise<T>) => eventually(probe, 30_000, 100);

/** How long the sandbox holds the send the lane claimed, ms: the reply lands inside it. */
const CLAIMED_SEND_HOLD_MS = 6000;

/**
 * A flow whose last step is a send ends `completed` as soon as that send is queued; the reply (or
 * any stop event) that arrives while the send still waits in the outbox must take it back all the
 * same (seed 000 "Stop paths and ordering": the reply wins until the send lane claims the
 * message). Through the real services: followups → messaging → outbox-dispatcher → the Meta
 * sandbox, the contact's messages through messaging's inbound path, the drain driven by hand so
 * the send waits in the outbox until the test lets it go.
 */
describe('queued follow-up sends lose to stop events', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let dispatcher: Dispatcher;
  let followups: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let org: string;
  const phoneNumberId = `${Date.now() + 7}`.slice(-15);
  const clock = new FixedClock(lastWeekdayMorning());
  let inboundSeconds = Math.floor(Date.now() / 1000);
  let waSeq = 0;

  beforeAll(async () => {
    world = await createTestWorld('fu_qcancel');
    sandbox = await SandboxHandle.start();
    // A claimed send is held by the sandbox longer than the harness's default deadline.
    ({ dispatcher, messaging, followups } = await startFollowupsWithSendPath(world, sandbox, { clock, dispatcherEnv: { WHATSAPP_SEND_TIMEOUT_MS: String(CLAIMED_SEND_HOLD_MS * 4) } }));
    org = randomUUID();
    await setLimits(world, org, {});
    // The dispatcher announces the number; messaging and followups keep it in their read models.
    await aProvisionedNumber(world, dispatcher, org, phoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(() => sandbox.reset());

  const fu = (table: string) => `"${world.schema('followups')}".${table}`;
  const enrollmentRow = async (id: string) => (await world.sql<Row>(`SELECT * FROM ${fu('enrollments')} WHERE id = $1`, [id]))[0];
  const sendEffect = async (enrollmentId: string) => (await world.sql<EffectRow>(`SELECT * FROM ${fu('effects')} WHERE enrollment_id = $1 AND kind = 'send'`, [enrollmentId]))[0];
  const outboxEntry = async (key: string) => (await world.sql<Row>(`SELECT * FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE idempotency_key = $1`, [key]))[0];
  /** The enrollment's timeline as the API shows it, oldest first. */
  const timeline = async (enrollmentId: string) => (await followups.get(EnrollmentsService).get({ organization_id: org, enrollment_id: enrollmentId })).events.reverse();
  const textsTo = async (waId: string) => (await sandbox.received(waId)).filter((c) => c.context.type === 'text').map((c) => (c.body as { text: { body: string } }).text.body);
  /** Drains twice, 7 s apart on the dispatcher's clock: the inbound's read receipt went first on the pair, and a pair paces 6.5 s. */
  const drain = async () => {
    await dispatcher.drain.drain(5000);
    dispatcher.clock.advance(7000);
    await dispatcher.drain.drain(5000);
  };
  const waBase = String(Date.now() % 10_000).padStart(4, '0');
  /** A new contact number per test (a contact's daily follow-up cap outlives a test). */
  const newWaId = () => `5592987${waBase}${String(++waSeq).padStart(2, '0')}`;

  /** The contact writes through messaging's WhatsApp inbound path, and followups has taken it in. */
  async function contactWrites(waId: string, text: string): Promise<{ contactId: string; conversationId: string }> {
    await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, text, (inboundSeconds += 5), phoneNumberId));
    const [row] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM "${world.schema('messaging')}".messages WHERE direction = 'inbound' AND body = $1 ORDER BY created_at DESC LIMIT 1`, [text]);
    await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('contacts')} WHERE contact_id = $1 AND last_inbound_text = $2`, [row!.contact_id, text])).length === 1);
    return { contactId: row!.contact_id, conversationId: row!.conversation_id };
  }

  const activeFlow = (graph: FlowGraph, settings: FlowSettings) => anActiveFlow(followups.get(FlowsService), org, { name: `fluxo ${randomUUID().slice(0, 6)}`, graph, settings });

  /**
   * A contact who wrote in, enrolled in a flow whose last step is a text: the release queues the
   * text and completes the enrollment; the text waits in the outbox (the drain is off).
   */
  async function completedWithQueuedText(flow: { graph: FlowGraph; settings: FlowSettings }, advanceNow = false) {
    const waId = newWaId();
    const who = await contactWrites(waId, `Oi, aqui é ${waId}`);
    const flowId = await activeFlow(flow.graph, flow.settings);
    const enrollments = followups.get(EnrollmentsService);
    const { enrollment } = await enrollments.create({ organization_id: org, flow_id: flowId, contact_id: who.contactId, conversation_id: who.conversationId, operation_key: randomUUID() });
    if (advanceNow) await enrollments.control({ organization_id: org, enrollment_id: enrollment.id, expected_revision: enrollment.revision, action: 'advance_now' });
    expect(await followups.get(ReleaseService).releaseOne()).toBe('released');
    expect(await enrollmentRow(enrollment.id)).toMatchObject({ status: 'completed', last_send_status: 'queued' });
    const effect = await sendEffect(enrollment.id);
    expect(effect.status).toBe('queued');
    await soon(async () => (await outboxEntry(effect.idempotency_key))?.status === 'pending');
    return { waId, who, flowId, enrollmentId: enrollment.id, effect };
  }

  /** The send never reached the wire, and followups knows it was cancelled and why. */
  async function expectCancelled(q: { waId: string; enrollmentId: string; effect: EffectRow }, cause: string) {
    await soon(async () => (await outboxEntry(q.effect.idempotency_key)).status === 'cancelled');
    await soon(async () => (await sendEffect(q.enrollmentId)).status === 'cancelled');
    await drain();
    expect(await textsTo(q.waId)).toEqual([]);
    expect(await enrollmentRow(q.enrollmentId)).toMatchObject({ status: 'completed', last_send_status: 'cancelled', inflight_effect_id: null });
    const events = await timeline(q.enrollmentId);
    const requested = events.findIndex((e) => e.type === 'send_cancel_requested');
    expect(events[requested]?.data).toMatchObject({ cause, effect_id: q.effect.id, enrollment_status: 'completed' });
    expect(events.findIndex((e) => e.type === 'send_cancelled')).toBeGreaterThan(requested);
  }

  it("cancels the seed example's reminder (wait → lembrete → fim) when the contact replies while it is queued, though the enrollment already completed", async () => {
    const queued = await completedWithQueuedText(SEED_002_FLOW_EXAMPLE, true);
    expect(queued.effect.text).toBe('Oi! Conseguiu ver a proposta que enviamos?');
    await contactWrites(queued.waId, 'Vi sim, obrigado!');
    await expectCancelled(queued, 'reply');
  });

  it('cancels the queued last text of a completed enrollment when the contact opts out (STOP)', async () => {
    const queued = await completedWithQueuedText(aFlow());
    await contactWrites(queued.waId, 'STOP');
    await expectCancelled(queued, 'opt_out');
  });

  it.each([
    {
      event: 'a human message (handoff policy pause)',
      cause: 'handoff',
      fire: (q: Queued) => publishEvent(world, MessagingEvents.HumanMessageSent, org, { message_id: randomUUID(), conversation_id: q.who.conversationId, contact_id: q.who.contactId, channel: 'whatsapp', operator_id: null }),
    },
    { event: 'the conversation resolved', cause: 'conversation_resolved', fire: (q: Queued) => publishEvent(world, MessagingEvents.ConversationResolved, org, { conversation_id: q.who.conversationId, contact_id: q.who.contactId, channel: 'whatsapp', resolved_by: null }) },
    { event: 'the contact erased', cause: 'contact_erased', fire: (q: Queued) => publishEvent(world, MessagingEvents.ContactErased, org, { contact_id: q.who.contactId, kind: 'crm' }) },
    {
      event: 'the flow archived',
      cause: 'flow_archived',
      fire: async (q: Queued) => {
        const flows = followups.get(FlowsService);
        const flow = await flows.get({ organization_id: org, flow_id: q.flowId });
        await flows.setStatus({ organization_id: org, flow_id: q.flowId, expected_revision: flow.revision, status: 'archived' });
      },
    },
  ])('cancels the queued last text of a completed enrollment on $event', async ({ cause, fire }) => {
    const queued = await completedWithQueuedText(aFlow());
    await fire(queued);
    await expectCancelled(queued, cause);
  });

  it('lets the queued text go when the stop event does not concern it (no cancel_on_reply, handoff policy continue)', async () => {
    const queued = await completedWithQueuedText({ graph: aFlow().graph, settings: { ...aFlow().settings, trigger: { kind: 'manual', cancel_on_reply: false }, handoff_policy: 'continue' } });
    await contactWrites(queued.waId, 'Obrigado pela mensagem');
    await publishEvent(world, MessagingEvents.HumanMessageSent, org, { message_id: randomUUID(), conversation_id: queued.who.conversationId, contact_id: queued.who.contactId, channel: 'whatsapp', operator_id: null });
    await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('contacts')} WHERE contact_id = $1 AND handoff_at IS NOT NULL`, [queued.who.contactId])).length === 1);
    await drain();
    expect(await textsTo(queued.waId)).toEqual(['Oi']);
    await soon(async () => (await sendEffect(queued.enrollmentId)).status === 'sent');
    expect((await timeline(queued.enrollmentId)).map((e) => e.type)).not.toContain('send_cancel_requested');
  });

  it('lets the queued text go when the reply that arrives is older than the enrollment (its event came late)', async () => {
    const queued = await completedWithQueuedText(aFlow());
    const late = await publishEvent(
      world,
      MessagingEvents.MessageReceived,
      org,
      aMessageReceived(queued.who.contactId, { conversation_id: queued.who.conversationId, external_id: newWamid(), text: 'mensagem antiga', from: `+${queued.waId}` }),
      new Date(clock.now().getTime() - 3_600_000),
    );
    await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('inbox_events')} WHERE event_id = $1`, [late.event_id])).length > 0);
    await drain();
    expect(await textsTo(queued.waId)).toEqual(['Oi']);
    await soon(async () => (await sendEffect(queued.enrollmentId)).status === 'sent');
    expect((await timeline(queued.enrollmentId)).map((e) => e.type)).not.toContain('send_cancel_requested');
  });

  it('sends the text the send lane had already claimed when the reply lands, and records it sent', async () => {
    const queued = await completedWithQueuedText(aFlow());
    await sandbox.fault({ kind: 'latency', latency_ms: CLAIMED_SEND_HOLD_MS, match: { wa_id: queued.waId, type: 'text' } });
    await dispatcher.drain.drain(5000); // the read receipt; the text waits for the pair's pacing
    dispatcher.clock.advance(7000);
    const inFlight = dispatcher.drain.drain(CLAIMED_SEND_HOLD_MS * 3);
    try {
      await soon(async () => (await outboxEntry(queued.effect.idempotency_key)).status === 'sending');
      await contactWrites(queued.waId, 'Já falei com vocês, obrigado');
      // The cancel reached the dispatcher while its attempt was on the wire: it cannot take it back.
      await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('outbox-dispatcher')}".inbox_events WHERE event_id = $1`, [`outbox.cancel:${queued.effect.idempotency_key}`])).length === 1);
      expect((await outboxEntry(queued.effect.idempotency_key)).status).toBe('sending');
    } finally {
      await inFlight;
    }
    expect(await textsTo(queued.waId)).toEqual(['Oi']);
    expect((await outboxEntry(queued.effect.idempotency_key)).status).toBe('accepted');
    await soon(async () => (await sendEffect(queued.enrollmentId)).status === 'sent');
    expect(await enrollmentRow(queued.enrollmentId)).toMatchObject({ status: 'completed', last_send_status: 'sent' });
    const types = (await timeline(queued.enrollmentId)).map((e) => e.type);
    expect(types).toContain('send_cancel_requested');
    expect(types).toContain('send_sent');
    expect(types).not.toContain('send_cancelled');
  });
});

type Queued = { waId: string; who: { contactId: string; conversationId: string }; flowId: string; enrollmentId: string; effect: EffectRow };
