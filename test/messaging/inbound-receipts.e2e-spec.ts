import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { MessagingEvents } from '@touchpoint/contracts';
import { Metrics } from '@touchpoint/observability';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { InboundReceiptsWorker } from '../../apps/messaging/src/inbound/inbound-receipts.worker.js';
import { InboundReceiptsService } from '../../apps/messaging/src/inbound/inbound-receipts.service.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { inboundText, newWamid, outboxEvents, registerSender } from './helpers.js';

/**
 * The Meta ingress acknowledges on the inbound receipt (one insert) and the receipt worker makes
 * the message (DESIGN §3). The worker is off here (INBOUND_POLL_MS=0) and each test runs its
 * passes by hand; abuse is not running, so checks fail open after a short deadline.
 */
describe('inbound receipts', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let inbound: InboundReceiptsService;
  let worker: InboundReceiptsWorker;
  const org = `org-${randomUUID()}`;
  const pnid = `pn-${randomUUID()}`;
  const m = () => world.schema('messaging');
  let ts = 1_760_200_000;

  beforeAll(async () => {
    world = await createTestWorld('receipts');
    app = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '200', INBOUND_POLL_MS: '0', INBOUND_CONCURRENCY: '4' })));
    inbound = app.get(InboundReceiptsService);
    worker = app.get(InboundReceiptsWorker);
    await registerSender(world, org, pnid);
  });
  afterAll(() => world.close());

  const receipts = (wamid: string) => world.sql<{ attempts: number; last_error: string | null; due_later: boolean }>(`SELECT attempts, last_error, due_at > now() AS due_later FROM "${m()}".inbound_receipts WHERE external_id = $1`, [wamid]);
  const messages = (wamid: string) => world.sql<{ body: string; created_at: Date }>(`SELECT body, created_at FROM "${m()}".messages WHERE external_id = $1`, [wamid]);
  const receivedEvents = async (wamid: string) => (await outboxEvents<{ external_id: string }>(world, 'messaging', MessagingEvents.MessageReceived)).filter((e) => e.payload.data.external_id === wamid);
  /** Runs worker passes until none claims anything. */
  const drain = async () => {
    while ((await worker.runOnce()) > 0);
  };

  it('acknowledges on the receipt alone, then the worker stores the message, sends its event and deletes the receipt', async () => {
    const wamid = newWamid();
    expect(await inbound.accept(inboundText(wamid, '5511970001111', 'is it in stock?', ts++, pnid))).toEqual({ accepted: 1, duplicates: 0, ignored: 0 });
    expect(await receipts(wamid)).toEqual([{ attempts: 0, last_error: null, due_later: false }]);
    expect(await messages(wamid)).toEqual([]);
    const gauge = async (name: string) => Number(new RegExp(`^touchpoint_${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(await app.get(Metrics).registry.metrics())?.[1]);
    expect(await gauge('messaging_inbound_receipts_waiting')).toBeGreaterThanOrEqual(1);
    expect(await gauge('messaging_inbound_receipt_oldest_seconds')).toBeGreaterThanOrEqual(0);

    await drain();
    expect((await messages(wamid)).map((r) => r.body)).toEqual(['is it in stock?']);
    expect(await receivedEvents(wamid)).toHaveLength(1);
    expect(await receipts(wamid)).toEqual([]);
    expect(await gauge('messaging_inbound_receipts_waiting')).toBe(0);
    expect(await gauge('messaging_inbound_receipt_oldest_seconds')).toBe(0);
  });

  it('keeps one receipt, one message and one event when the same wamid is delivered three times at once', async () => {
    const wamid = newWamid();
    const batch = inboundText(wamid, '5511970002222', 'hello', ts++, pnid);
    const results = await Promise.all([inbound.accept(batch), inbound.accept(batch), inbound.accept(batch)]);
    expect(results.reduce((n, r) => n + r.accepted, 0)).toBe(1);
    expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(2);
    await drain();
    // Meta redelivers after the receipt is gone: a new receipt, processed as a duplicate.
    expect(await inbound.accept(batch)).toMatchObject({ accepted: 1 });
    await drain();
    expect(await messages(wamid)).toHaveLength(1);
    expect(await receivedEvents(wamid)).toHaveLength(1);
    expect(await receipts(wamid)).toEqual([]);
  });

  it("writes, with the receipts and in the same statement, one hold per person named by that person's first new message, none for a redelivery or a system message", async () => {
    const [a1, a2, b1, sys] = [newWamid(), newWamid(), newWamid(), newWamid()];
    // Both notations of one Brazilian mobile are one person.
    const [personA, personAOther, personB] = ['5511970007777', '551170007777', '5511970008888'];
    const holds = async () => (await outboxEvents<{ from: string; channel: string }>(world, 'messaging', MessagingEvents.InboundAcknowledged)).filter((e) => [a1, a2, b1, sys].some((w) => e.event_id.endsWith(`:${w}`)));
    const change = (...messages: Record<string, unknown>[]) => ({ ...inboundText(a1, personA, 'x', ts, pnid), messages }) as ReturnType<typeof inboundText>;
    const text = (id: string, from: string) => ({ from, id, timestamp: String(ts++), type: 'text', text: { body: `text ${id}` } });

    expect(await inbound.accept(change(text(a1, personA)))).toMatchObject({ accepted: 1 });
    expect((await holds()).map((e) => e.event_id)).toEqual([`${MessagingEvents.InboundAcknowledged}:${org}:whatsapp:${a1}`]);

    // a1 again (still a receipt), a2 from A's other notation, b1 from B, and Meta's own system message.
    const mixed = change(text(a1, personA), text(a2, personAOther), text(b1, personB), { from: personB, id: sys, timestamp: String(ts++), type: 'system', system: { body: 'number changed' } });
    expect(await inbound.accept(mixed)).toEqual({ accepted: 3, duplicates: 1, ignored: 0 });
    expect((await holds()).map((e) => [e.event_id.split(':').at(-1), e.payload.data.from, e.payload.organization_id])).toEqual([
      [a1, personA, org],
      [a2, personAOther, org],
      [b1, personB, org],
    ]);

    // The whole change redelivered: every message is a waiting receipt, nothing new is published.
    expect(await inbound.accept(mixed)).toEqual({ accepted: 0, duplicates: 4, ignored: 0 });
    expect(await holds()).toHaveLength(3);
    await drain();
  });

  it('ignores a message without a phone sender or without an id, storing no receipt for it and keeping the rest of the change', async () => {
    const noPhone = newWamid();
    const good = newWamid();
    const batch = inboundText(noPhone, 'not-a-phone', 'x', ts++, pnid);
    batch.messages.push({ from: '5511970003333', type: 'text', text: { body: 'no id' } } as never, { from: '5511970003333', id: good, timestamp: String(ts++), type: 'text', text: { body: 'fine' } });
    expect(await inbound.accept(batch)).toEqual({ accepted: 1, duplicates: 0, ignored: 2 });
    expect(await receipts(noPhone)).toEqual([]);
    expect(await receipts(good)).toHaveLength(1);
    await drain();
  });

  it('takes odd but signed shapes without a retry loop: ids out of bounds are ignored, wrong field types read as no text, NUL characters dropped', async () => {
    const from = '5511970008888';
    const batch = inboundText(newWamid(), from, 'ok', ts++, pnid);
    const [numericBody, futureTime, nul, longId] = [newWamid(), newWamid(), newWamid(), `wamid.long.${'y'.repeat(4000)}`];
    batch.contacts = 'x' as never;
    batch.messages = [
      { from, id: '', timestamp: String(ts), type: 'text', text: { body: 'empty id' } },
      { from, id: longId, timestamp: String(ts), type: 'text', text: { body: 'long id' } },
      { from, id: numericBody, timestamp: String(ts++), type: 'text', text: { body: 42 } } as never,
      { from, id: futureTime, timestamp: '99999999999999', type: 'text', text: { body: 'from the future' } },
      { from, id: nul, timestamp: String(ts++), type: 'text', text: { body: 'a\u0000b' } },
    ];
    expect(await inbound.accept(batch)).toEqual({ accepted: 3, duplicates: 0, ignored: 2 });
    await drain();
    const rows = await world.sql<{ external_id: string; body: string | null; provider_timestamp: Date }>(`SELECT external_id, body, provider_timestamp FROM "${m()}".messages WHERE external_id = ANY($1) ORDER BY created_at, id`, [[numericBody, futureTime, nul]]);
    expect(rows.map((r) => [r.external_id, r.body])).toEqual([
      [numericBody, null],
      [futureTime, 'from the future'],
      [nul, 'ab'],
    ]);
    expect(rows[1]!.provider_timestamp.getTime()).toBeLessThan(Date.now() + 60_000);
    expect(await world.sql(`SELECT 1 FROM "${m()}".inbound_receipts WHERE organization_id = $1`, [org])).toEqual([]);
  });

  it("stores each sender's messages in arrival order while several senders run at once", async () => {
    const senders = ['5511970004401', '5511970004402', '5511970004403'];
    const sent: Record<string, string[]> = {};
    for (let i = 0; i < 4; i++) {
      for (const from of senders) {
        const wamid = newWamid();
        (sent[from] ??= []).push(wamid);
        await inbound.accept(inboundText(wamid, from, `${from} #${i}`, ts++, pnid));
      }
    }
    await drain();
    for (const from of senders) {
      const rows = await world.sql<{ external_id: string }>(`SELECT external_id FROM "${m()}".messages WHERE external_id = ANY($1) ORDER BY created_at, id`, [sent[from]]);
      expect(rows.map((r) => r.external_id)).toEqual(sent[from]);
    }
  });

  it('stores a batch of new and known senders in one pass: one contact, conversation and instance each, their events once, and no receipt left', async () => {
    const known = '5511970008801';
    const first = newWamid();
    await inbound.accept(inboundText(first, known, 'known before', ts++, pnid));
    await drain();
    const fresh = ['5511970008802', '5511970008803', '5511970008804'];
    const sent: Record<string, string[]> = {};
    for (let i = 0; i < 3; i++) {
      for (const from of [known, ...fresh]) {
        const wamid = newWamid();
        (sent[from] ??= []).push(wamid);
        await inbound.accept(inboundText(wamid, from, `${from} #${i}`, ts++, pnid));
      }
    }
    expect(await worker.runOnce()).toBe(12);
    const all = Object.values(sent).flat();
    expect(await world.sql(`SELECT 1 FROM "${m()}".inbound_receipts WHERE external_id = ANY($1)`, [all])).toEqual([]);
    for (const from of [known, ...fresh]) {
      const rows = await world.sql<{ external_id: string; contact_id: string; conversation_id: string; instance_id: string }>(`SELECT external_id, contact_id, conversation_id, instance_id FROM "${m()}".messages WHERE external_id = ANY($1) ORDER BY created_at, id`, [sent[from]]);
      expect(rows.map((r) => r.external_id)).toEqual(sent[from]);
      expect(new Set(rows.map((r) => `${r.contact_id}|${r.conversation_id}|${r.instance_id}`)).size).toBe(1);
      const [{ contacts, conversations, instances, count }] = await world.sql<{ contacts: number; conversations: number; instances: number; count: number }>(
        `SELECT (SELECT count(*)::int FROM "${m()}".contacts WHERE phone_key = $1) AS contacts,
                (SELECT count(*)::int FROM "${m()}".conversations WHERE contact_id = $2) AS conversations,
                (SELECT count(*)::int FROM "${m()}".conversation_instances WHERE conversation_id = $3) AS instances,
                (SELECT message_count FROM "${m()}".conversation_instances WHERE id = $4) AS count`,
        [from, rows[0]!.contact_id, rows[0]!.conversation_id, rows[0]!.instance_id],
      );
      expect({ contacts, conversations, instances, count }).toEqual({ contacts: 1, conversations: 1, instances: 1, count: from === known ? 4 : 3 });
    }
    const created = (await outboxEvents<{ phone: string }>(world, 'messaging', MessagingEvents.ContactCreated)).filter((e) => [known, ...fresh].includes(e.payload.data.phone.slice(1)));
    expect(created.map((e) => e.payload.data.phone).sort()).toEqual([known, ...fresh].map((p) => `+${p}`).sort());
    const received = (await outboxEvents<{ external_id: string }>(world, 'messaging', MessagingEvents.MessageReceived)).filter((e) => all.includes(e.payload.data.external_id));
    expect(received.map((e) => e.payload.data.external_id).sort()).toEqual([...all].sort());
    const readReceipts = await world.sql(`SELECT 1 FROM "${m()}".outbox_events WHERE type = 'outbox.enqueue' AND payload->'data'->>'idempotency_key' = ANY($1)`, [all.map((w) => `read:${w}`)]);
    expect(readReceipts).toHaveLength(all.length);
    const feed = await world.sql<{ type: string }>(`SELECT type FROM "${m()}".stream_events WHERE type = 'messaging.message.received' AND data->>'external_id' = ANY($1)`, [all]);
    expect(feed).toHaveLength(all.length);
  });

  it('files both notations of a Brazilian mobile (with and without the ninth digit) in one batch under one conversation, in order', async () => {
    const [withNine, withoutNine] = [newWamid(), newWamid()];
    await inbound.accept(inboundText(withNine, '5511987650001', 'com nove', ts++, pnid));
    await inbound.accept(inboundText(withoutNine, '551187650001', 'sem nove', ts++, pnid));
    await drain();
    const rows = await world.sql<{ external_id: string; conversation_id: string }>(`SELECT external_id, conversation_id FROM "${m()}".messages WHERE external_id = ANY($1) ORDER BY created_at, id`, [[withNine, withoutNine]]);
    expect(rows.map((r) => r.external_id)).toEqual([withNine, withoutNine]);
    expect(new Set(rows.map((r) => r.conversation_id)).size).toBe(1);
  });

  it('puts a message back with a doubling wait when it cannot be judged, holds the same sender behind it, and stores both once it can', async () => {
    const from = '5511970005555';
    const [first, second] = [newWamid(), newWamid()];
    await inbound.accept(inboundText(first, from, 'first', ts++, pnid));
    await inbound.accept(inboundText(second, from, 'second', ts++, pnid));
    // abuse is down and its read model unreadable: fail closed means "not now" (seed 004).
    await world.sql(`ALTER TABLE "${m()}".abuse_restrictions RENAME TO abuse_restrictions_away`);
    try {
      await worker.runOnce();
    } finally {
      await world.sql(`ALTER TABLE "${m()}".abuse_restrictions_away RENAME TO abuse_restrictions`);
    }
    expect(await receipts(first)).toEqual([{ attempts: 1, last_error: expect.stringContaining('service_unavailable'), due_later: true }]);
    expect(await receipts(second)).toEqual([{ attempts: 0, last_error: null, due_later: true }]);
    expect(await worker.runOnce()).toBe(0);
    expect([...(await messages(first)), ...(await messages(second))]).toEqual([]);

    // Time passes: both are due again and go through, in order.
    await world.sql(`UPDATE "${m()}".inbound_receipts SET due_at = now() WHERE external_id = ANY($1)`, [[first, second]]);
    await drain();
    const rows = await world.sql<{ external_id: string }>(`SELECT external_id FROM "${m()}".messages WHERE external_id = ANY($1) ORDER BY created_at, id`, [[first, second]]);
    expect(rows.map((r) => r.external_id)).toEqual([first, second]);
    expect([...(await receipts(first)), ...(await receipts(second))]).toEqual([]);
  });

  it('makes one message when a worker crashed after storing it and before deleting the receipt (the lease ends, the next pass is a duplicate)', async () => {
    const wamid = newWamid();
    await inbound.accept(inboundText(wamid, '5511970006666', 'crash test', ts++, pnid));
    const [claimed] = await world.sql<{ id: string }>(`SELECT id FROM "${m()}".inbound_receipts WHERE external_id = $1`, [wamid]);
    // The first worker's pass, cut short: processed, receipt still there and leased.
    const [row] = await world.sql(`UPDATE "${m()}".inbound_receipts SET due_at = now() + interval '30 seconds' WHERE id = $1 RETURNING *`, [claimed!.id]);
    expect(await inbound.processReceipt(row as never)).toBe('stored');
    expect(await worker.runOnce()).toBe(0);
    // The lease ends.
    await world.sql(`UPDATE "${m()}".inbound_receipts SET due_at = now() WHERE id = $1`, [claimed!.id]);
    await drain();
    expect(await messages(wamid)).toHaveLength(1);
    expect(await receivedEvents(wamid)).toHaveLength(1);
    expect(await receipts(wamid)).toEqual([]);
  });

  it('lets two workers race over the same receipts without a duplicate or a loss', async () => {
    const wamids = Array.from({ length: 24 }, () => newWamid());
    await Promise.all(wamids.map((w, i) => inbound.accept(inboundText(w, `55119700077${String(i).padStart(2, '0')}`, `race ${i}`, ts + i, pnid))));
    ts += 30;
    const other = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '200', INBOUND_POLL_MS: '0', INBOUND_BATCH: '5' })));
    const second = other.get(InboundReceiptsWorker);
    const claimed = await Promise.all([worker.runOnce(), second.runOnce()]);
    expect(claimed[0] + claimed[1]).toBeGreaterThan(0);
    await Promise.all([
      drain(),
      (async () => {
        while ((await second.runOnce()) > 0);
      })(),
    ]);
    const [{ n, distinct }] = await world.sql<{ n: number; distinct: number }>(`SELECT count(*)::int AS n, count(DISTINCT external_id)::int AS distinct FROM "${m()}".messages WHERE external_id = ANY($1)`, [wamids]);
    expect({ n, distinct }).toEqual({ n: 24, distinct: 24 });
    expect((await world.sql(`SELECT 1 FROM "${m()}".inbound_receipts WHERE external_id = ANY($1)`, [wamids])).length).toBe(0);
  });
});
