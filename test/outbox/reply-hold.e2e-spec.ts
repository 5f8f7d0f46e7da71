import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { type InboundAcknowledgedData, MessagingEvents } from '@touchpoint/contracts';
import { runInTransaction, type Tx } from '@touchpoint/database';
import { aFlow, anActiveFlow, aProvisionedNumber, createTestWorld, eventually, lastWeekdayMorning, publishEvent, type TestWorld } from '@touchpoint/testing';
import { DataSource } from 'typeorm';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { ReplyHoldConsumer } from '../../apps/outbox-dispatcher/src/reply-hold/reply-hold.consumer.js';
import { InboundReceiptsService } from '../../apps/messaging/src/inbound/inbound-receipts.service.js';
import { InboundRecordService } from '../../apps/messaging/src/inbound/inbound-record.service.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, setLimits } from '../messaging/helpers.js';
import { startFollowups, startFollowupsWithSendPath } from '../followups/followups-world.js';
import { type Dispatcher, SandboxHandle, textTo } from './harness.js';

type Row = Record<string, unknown>;

/** Waits for a fact across several services on a busy machine (up to 30 s). */
const soon = <T>(probe: () => Promise<T>) => eventually(probe, 30_000, 100);

/** The dispatcher's default OUTBOX_REPLY_HOLD_MS. */
const HOLD_MS = 20_000;

/**
 * The reply hold (issue 17): when messaging acknowledges a person's message, the dispatcher holds
 * that person's queued sends that stop on a reply for OUTBOX_REPLY_HOLD_MS, so the requester's
 * cancel (two bus hops later, unbounded under load) arrives before the claim. Through the real
 * services (followups → messaging → outbox-dispatcher → the Meta sandbox); the reply through
 * messaging's acknowledgement (`InboundReceiptsService.accept`); followups stopped while the reply
 * is acknowledged, so its cancel can only come once it is back; the drain driven by hand on the
 * dispatcher's own clock. What reached the provider is read at the sandbox.
 */
describe('reply hold: stop-on-reply sends wait for the requester after the person writes', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let dispatcher: Dispatcher;
  let followups: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let org: string;
  const phoneNumberId = `${Date.now() + 11}`.slice(-15);
  const clock = new FixedClock(lastWeekdayMorning());
  let inboundSeconds = Math.floor(Date.now() / 1000);
  let waSeq = 0;

  beforeAll(async () => {
    world = await createTestWorld('reply_hold');
    sandbox = await SandboxHandle.start();
    ({ dispatcher, messaging, followups } = await startFollowupsWithSendPath(world, sandbox, { clock }));
    org = randomUUID();
    await setLimits(world, org, {});
    await aProvisionedNumber(world, dispatcher, org, phoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(() => sandbox.reset());

  const fu = (table: string) => `"${world.schema('followups')}".${table}`;
  const ob = (table: string) => `"${world.schema('outbox-dispatcher')}".${table}`;
  const entryByKey = async (key: string) => (await world.sql<Row & { status: string; next_attempt_at: Date; stop_on_reply: boolean }>(`SELECT * FROM ${ob('message_outbox')} WHERE idempotency_key = $1`, [key]))[0];
  const textsTo = async (waId: string) => (await sandbox.received(waId)).filter((c) => c.context.type === 'text').map((c) => (c.body as { text: { body: string } }).text.body);
  /** Drains, then again past the pair's pacing (6.5 s): the inbound's read receipt may share the pair. */
  const drain = async () => {
    await dispatcher.drain.drain(5000);
    dispatcher.clock.advance(7000);
    await dispatcher.drain.drain(5000);
  };
  const waBase = String(Date.now() % 10_000).padStart(4, '0');
  const newWaId = () => `5592986${waBase}${String(++waSeq).padStart(2, '0')}`;
  const holdsSeen = async () => (await world.sql(`SELECT 1 FROM ${ob('inbox_events')} WHERE event_id LIKE $1`, [`${MessagingEvents.InboundAcknowledged}:%`])).length;

  /** The contact writes through messaging's acknowledgement (the gateway's RPC), as the webhook does. */
  async function acknowledged(waId: string, text: string): Promise<void> {
    const before = await holdsSeen();
    const result = await messaging.get(InboundReceiptsService).accept(inboundText(newWamid(), waId, text, (inboundSeconds += 5), phoneNumberId));
    expect(result.accepted).toBe(1);
    // The dispatcher took the hold in (its inbox recorded the event).
    await soon(async () => (await holdsSeen()) > before);
  }

  /** A contact who wrote, enrolled in a cancel_on_reply flow whose only step is a text, the text queued. */
  async function queuedFollowUp(): Promise<{ waId: string; key: string }> {
    const waId = newWaId();
    const text = `Oi, aqui é ${waId}`;
    await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, text, (inboundSeconds += 5), phoneNumberId));
    const [row] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM "${world.schema('messaging')}".messages WHERE direction = 'inbound' AND body = $1`, [text]);
    await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('contacts')} WHERE contact_id = $1 AND last_inbound_text = $2`, [row!.contact_id, text])).length === 1);
    const flow = aFlow();
    expect(flow.settings.trigger.cancel_on_reply).toBe(true);
    const flowId = await anActiveFlow(followups.get(FlowsService), org, { name: `fluxo ${randomUUID().slice(0, 6)}`, graph: flow.graph, settings: flow.settings });
    const { enrollment } = await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: flowId, contact_id: row!.contact_id, conversation_id: row!.conversation_id, operation_key: randomUUID() });
    expect(await followups.get(ReleaseService).releaseOne()).toBe('released');
    const [effect] = await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM ${fu('effects')} WHERE enrollment_id = $1 AND kind = 'send'`, [enrollment.id]);
    await soon(async () => (await entryByKey(effect!.idempotency_key))?.status === 'pending');
    // Followups said the send stops on a reply; messaging carried it to the entry.
    expect((await entryByKey(effect!.idempotency_key))!.stop_on_reply).toBe(true);
    return { waId, key: effect!.idempotency_key };
  }

  it("holds a cancel_on_reply follow-up after the person's reply is acknowledged while followups is down, and the cancel it sends once back wins", async () => {
    const queued = await queuedFollowUp();
    // Followups is stopped: its cancel can only come once it is back (issue 17: it came 9 s late).
    await followups.close();
    try {
      await acknowledged(queued.waId, 'Oi, já vi a proposta');
      const held = await entryByKey(queued.key);
      expect(held!.status).toBe('pending');
      expect(new Date(held!.next_attempt_at).getTime()).toBeGreaterThanOrEqual(dispatcher.clock.now().getTime() + HOLD_MS - 8000);
      // Inside the hold the send lane does not claim it: nothing on the wire.
      await drain();
      await drain();
      expect(await textsTo(queued.waId)).toEqual([]);
      expect((await entryByKey(queued.key))!.status).toBe('pending');
    } finally {
      followups = await startFollowups(world, { clock });
    }
    // Back, followups takes the reply in and cancels the send (the reply wins, DESIGN §5.3).
    await soon(async () => (await entryByKey(queued.key))!.status === 'cancelled');
    dispatcher.clock.advance(HOLD_MS);
    await drain();
    expect(await textsTo(queued.waId)).toEqual([]);
  });

  it('does not hold a send that is not marked stop-on-reply (a notification, an operator send) to the same person', async () => {
    const waId = newWaId();
    const entry = await dispatcher.enqueue.enqueue(textTo(org, waId, { requester: 'messaging' }));
    await acknowledged(waId, 'Oi, alguém aí?');
    // The read receipt of that message and the unmarked text share the pair: both go, nothing waits the hold out.
    await drain();
    expect(await textsTo(waId)).toHaveLength(1);
    expect((await entryByKey((await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM ${ob('message_outbox')} WHERE id = $1`, [entry.entry_id]))[0]!.idempotency_key))!.status).toBe('accepted');
  });

  it('lets a held send go once the hold ends when no cancel arrives', async () => {
    const waId = newWaId();
    const data = textTo(org, waId, { stop_on_reply: true });
    await dispatcher.enqueue.enqueue(data);
    expect((await entryByKey(data.idempotency_key))!.stop_on_reply).toBe(true);
    await acknowledged(waId, 'Obrigado!');
    await drain();
    expect(await textsTo(waId)).toEqual([]);
    // Nobody cancels it (the requester judged it no reply): past the hold it goes.
    dispatcher.clock.advance(HOLD_MS);
    await drain();
    expect(await textsTo(waId)).toHaveLength(1);
    expect((await entryByKey(data.idempotency_key))!.status).toBe('accepted');
  });

  it('tells the dispatcher of an email the same way, from the transaction that stores it before the acknowledgement', async () => {
    const externalId = `nylas-${randomUUID()}`;
    await messaging.get(InboundRecordService).record({ organization_id: org, channel: 'email', from: `pessoa.${waSeq}@example.com`, external_id: externalId, subject: 'Re: proposta', text: 'Vi sim, obrigado' });
    // Published with the message (the RPC answered only after that commit), consumed by the dispatcher.
    const [published] = await world.sql<{ payload: { data: InboundAcknowledgedData } }>(`SELECT payload FROM "${world.schema('messaging')}".outbox_events WHERE event_id = $1`, [`${MessagingEvents.InboundAcknowledged}:${org}:email:${externalId}`]);
    expect(published?.payload.data).toMatchObject({ channel: 'email', from: `pessoa.${waSeq}@example.com` });
    await soon(async () => (await world.sql(`SELECT 1 FROM ${ob('inbox_events')} WHERE event_id = $1`, [`${MessagingEvents.InboundAcknowledged}:${org}:email:${externalId}`])).length === 1);
  });

  it('is harmless delivered twice or after the cancel: the hold never moves, a cancelled entry stays cancelled', async () => {
    const waId = newWaId();
    const first = textTo(org, waId, { stop_on_reply: true });
    await dispatcher.enqueue.enqueue(first);
    const ack: InboundAcknowledgedData = { channel: 'whatsapp', from: waId, sender_id: null, acknowledged_at: dispatcher.clock.now().toISOString() };
    const expected = dispatcher.clock.now().getTime() + HOLD_MS;
    // The same event twice (the inbox drops the copy), then a redelivery under a new id later on.
    const message = await publishEvent(world, MessagingEvents.InboundAcknowledged, org, ack, { times: 2 });
    await soon(async () => (await world.sql(`SELECT 1 FROM ${ob('inbox_events')} WHERE event_id = $1`, [message.event_id])).length === 1);
    expect(new Date((await entryByKey(first.idempotency_key))!.next_attempt_at).getTime()).toBe(expected);
    dispatcher.clock.advance(5000);
    const again = await publishEvent(world, MessagingEvents.InboundAcknowledged, org, ack);
    await soon(async () => (await world.sql(`SELECT 1 FROM ${ob('inbox_events')} WHERE event_id = $1`, [again.event_id])).length === 1);
    expect(new Date((await entryByKey(first.idempotency_key))!.next_attempt_at).getTime()).toBe(expected);

    // After the cancel: the entry stays cancelled and never reaches the wire.
    const second = textTo(org, waId, { stop_on_reply: true });
    await dispatcher.enqueue.enqueue(second);
    expect((await dispatcher.enqueue.cancel({ organization_id: org, idempotency_key: second.idempotency_key })).outcome).toBe('cancelled');
    const late = await publishEvent(world, MessagingEvents.InboundAcknowledged, org, { ...ack, acknowledged_at: dispatcher.clock.now().toISOString() });
    await soon(async () => (await world.sql(`SELECT 1 FROM ${ob('inbox_events')} WHERE event_id = $1`, [late.event_id])).length === 1);
    expect((await entryByKey(second.idempotency_key))!.status).toBe('cancelled');
    dispatcher.clock.advance(HOLD_MS);
    await drain();
    // Only the first (held, never cancelled) went, after its hold.
    expect(await textsTo(waId)).toEqual([(first.payload as { body: string }).body]);
    expect((await entryByKey(second.idempotency_key))!.status).toBe('cancelled');
  });
  it('holds every person of a consumer batch in one statement before the commit, the later acknowledgement of a person winning', async () => {
    const [ana, bia, cid] = [newWaId(), newWaId(), newWaId()];
    const entries = [textTo(org, ana, { stop_on_reply: true }), textTo(org, bia, { stop_on_reply: true }), textTo(org, cid, { stop_on_reply: true }), textTo(org, cid, { requester: 'messaging' })];
    for (const e of entries) await dispatcher.enqueue.enqueue(e);
    const now = dispatcher.clock.now().getTime();
    const ack = (from: string, agoMs: number, n: number) => ({
      event_id: `${MessagingEvents.InboundAcknowledged}:${org}:whatsapp:batch-${randomUUID()}-${n}`,
      type: MessagingEvents.InboundAcknowledged,
      organization_id: org,
      occurred_at: new Date(now).toISOString(),
      data: { channel: 'whatsapp', from, sender_id: null, acknowledged_at: new Date(now - agoMs).toISOString() } as InboundAcknowledgedData,
    });
    const consumer = dispatcher.app.get(ReplyHoldConsumer);
    const statements: string[] = [];
    await runInTransaction(dispatcher.app.get(DataSource), world.schema('outbox-dispatcher'), async (tx) => {
      const recording: Tx = { ...tx, query: (sql, params) => (statements.push(sql), tx.query(sql, params)) };
      // Bia wrote twice: her later message holds her longer.
      for (const message of [ack(ana, 0, 1), ack(bia, 4000, 2), ack(bia, 1000, 3), ack(cid, 0, 4)]) await consumer.onAcknowledged(message, recording);
      // Nothing written yet: the holds wait for the commit.
      expect(statements).toEqual([]);
      tx.beforeCommit(async () => void expect(statements.filter((s) => /UPDATE message_outbox/.test(s))).toHaveLength(1));
    });
    const heldUntil = async (key: string) => new Date((await entryByKey(key))!.next_attempt_at).getTime();
    expect(await heldUntil(entries[0].idempotency_key)).toBe(now + HOLD_MS);
    expect(await heldUntil(entries[1].idempotency_key)).toBe(now - 1000 + HOLD_MS);
    expect(await heldUntil(entries[2].idempotency_key)).toBe(now + HOLD_MS);
    // Not marked stop-on-reply: not held.
    expect(await heldUntil(entries[3].idempotency_key)).toBeLessThan(now + 1000);
  });
});
