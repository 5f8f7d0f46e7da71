import amqplib from 'amqplib';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { BusNames, DeadLetterAdmin } from '@touchpoint/bus';
import { ServiceConfig } from '@touchpoint/config';
import { type BusMessage, PlatformEvents } from '@touchpoint/contracts';
import { createTestWorld, duplicateCounts, eventually, type ServiceApp, type TestWorld, untilRedeliveryDiscarded } from '@touchpoint/testing';
import { Metrics } from '@touchpoint/observability';
import { BusService } from '@touchpoint/runtime';
import { PROBE_WAKE, probeControl, probeService } from './probe.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const message = (eventId: string, type: string = PlatformEvents.ProbeRecorded): BusMessage => ({
  event_id: eventId,
  type,
  organization_id: null,
  occurred_at: new Date().toISOString(),
  data: { seq: 1 },
});

describe('BusConnection (consumer side)', () => {
  let world: TestWorld;
  let conn: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  let app: ServiceApp;
  const names = () => new BusNames(world.namespace, 'followups');

  beforeAll(async () => {
    world = await createTestWorld('consumer');
    // Small retry base so the backoff sequence (100, 200, 400 ms) is observable quickly.
    app = await world.start(probeService('followups', world.config(ServiceConfig, { BUS_MAX_ATTEMPTS: '4', BUS_RETRY_BASE_MS: '100', BUS_BATCH_LOCK_TIMEOUT_MS: '300' }), true));
    conn = await amqplib.connect(world.amqpUrl);
    channel = await conn.createConfirmChannel();
  });
  afterAll(async () => {
    await conn.close().catch(() => undefined);
    await world.close();
  });

  const handled = async (eventId: string) => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${world.schema('followups')}".probe_handled WHERE event_id = $1`, [eventId]))[0].n;

  const publish = async (m: BusMessage, routingKey = m.type) => {
    channel.publish(`${world.namespace}.events`, routingKey, Buffer.from(JSON.stringify(m)), { persistent: true, messageId: m.event_id });
    await channel.waitForConfirms();
  };

  it('handles an event delivered twice only once (inbox)', async () => {
    const id = `dup-${randomUUID()}`;
    const before = await duplicateCounts(app);
    await publish(message(id));
    await publish(message(id));
    // Barrier: the second delivery was taken and counted a duplicate.
    await untilRedeliveryDiscarded(world, app, 'followups', id, before);
    expect(await handled(id)).toBe(1);
    const inbox = await world.sql<{ handler: string }>(`SELECT handler FROM "${world.schema('followups')}".inbox_events WHERE event_id = $1`, [id]);
    expect(inbox).toEqual([{ handler: 'ProbeConsumer.onProbe' }]);
  });

  it('shares one transaction among messages that queue up, and a failing one among them is retried alone while the rest are handled once', async () => {
    const prefix = `burst-${randomUUID()}-`;
    const ids = Array.from({ length: 60 }, (_, i) => `${prefix}${i}`);
    const failing = ids[17]!;
    probeControl.failing.add(failing);
    try {
      for (const id of ids) channel.publish(`${world.namespace}.events`, PlatformEvents.ProbeRecorded, Buffer.from(JSON.stringify(message(id))), { persistent: true, messageId: id });
      await channel.waitForConfirms();
      const rows = () => world.sql<{ event_id: string; tx: string }>(`SELECT event_id, xmin::text AS tx FROM "${world.schema('followups')}".probe_handled WHERE event_id LIKE $1`, [`${prefix}%`]);
      await eventually(async () => (await rows()).length === ids.length - 1, 15_000);
      // The failing message was tried again on its own (the retry queue), not stored.
      await eventually(() => (probeControl.attempts.get(failing)?.length ?? 0) >= 3, 15_000);
      const handledRows = await rows();
      expect(handledRows.map((r) => r.event_id).sort()).toEqual(ids.filter((id) => id !== failing).sort());
      // Rows written by one transaction share its xmin: fewer transactions than messages.
      expect(new Set(handledRows.map((r) => r.tx)).size).toBeLessThan(handledRows.length);
    } finally {
      probeControl.failing.delete(failing);
    }
  });

  /** Publishes `ids` while every handler waits at a gate, so that all but the first few queue up and go in batches. */
  const burst = async (ids: string[], whileQueued: () => Promise<void> = async () => undefined) => {
    let open!: () => void;
    probeControl.gate = new Promise<void>((resolve) => (open = resolve));
    try {
      for (const id of ids) channel.publish(`${world.namespace}.events`, PlatformEvents.ProbeRecorded, Buffer.from(JSON.stringify(message(id))), { persistent: true, messageId: id });
      await channel.waitForConfirms();
      // Every message delivered: the ones without a slot wait for one.
      await eventually(() => ids.filter((id) => probeControl.attempts.has(id)).length > 0, 10_000);
      await whileQueued();
    } finally {
      probeControl.gate = undefined;
      open();
    }
  };
  const handledIds = async (prefix: string) => (await world.sql<{ event_id: string }>(`SELECT event_id FROM "${world.schema('followups')}".probe_handled WHERE event_id LIKE $1`, [`${prefix}%`])).map((r) => r.event_id);

  it("runs a batch's preparer first, in the batch's transaction, with every message of the batch", async () => {
    const prefix = `prep-${randomUUID()}-`;
    const ids = Array.from({ length: 40 }, (_, i) => `${prefix}${i}`);
    probeControl.batches.length = 0;
    await burst(ids, () => sleep(300));
    await eventually(async () => (await handledIds(prefix)).length === ids.length, 15_000);
    const batches = probeControl.batches.filter((b) => b.every((id) => id.startsWith(prefix)));
    expect(batches.length).toBeGreaterThan(0);
    expect(batches.every((b) => b.length > 1)).toBe(true);
    // Each message at most once in a batch, and each handled once.
    const prepared = batches.flat();
    expect(new Set(prepared).size).toBe(prepared.length);
    expect((await handledIds(prefix)).sort()).toEqual([...ids].sort());
  });

  it('puts messages of one type in a batch: arrivals of two types interleaved go in batches of either', async () => {
    const prefix = `mixed-${randomUUID()}-`;
    const ids = Array.from({ length: 40 }, (_, i) => `${prefix}${i}`);
    probeControl.batches.length = 0;
    probeControl.batchTypes.length = 0;
    const wakesBefore = probeControl.wakes;
    await burst(ids, async () => {
      for (let i = 0; i < 40; i++) channel.publish(`${world.namespace}.events`, PROBE_WAKE, Buffer.from(JSON.stringify(message(`${prefix}wake-${i}`, PROBE_WAKE))), { persistent: true, messageId: `${prefix}wake-${i}` });
      await channel.waitForConfirms();
      await sleep(300);
    });
    await eventually(async () => (await handledIds(prefix)).length === ids.length && probeControl.wakes - wakesBefore === 40, 15_000);
    const mine = probeControl.batchTypes.filter((_, i) => probeControl.batches[i]!.every((id) => id.startsWith(prefix)));
    expect(mine.some((types) => types[0] === PROBE_WAKE)).toBe(true);
    expect(mine.every((types) => types.length > 1 && types.every((t) => t === types[0]))).toBe(true);
  });

  it('rolls a batch back when it waits on a lock longer than BUS_BATCH_LOCK_TIMEOUT_MS, and its messages run one by one meanwhile', async () => {
    const prefix = `locked-${randomUUID()}-`;
    const ids = Array.from({ length: 40 }, (_, i) => `${prefix}${i}`);
    const key = Math.floor(Math.random() * 1_000_000_000);
    const rollbacks = async () => (await app.get(Metrics).busBatchRollbacks.get()).values.find((v) => v.labels.reason === 'lock_timeout')?.value ?? 0;
    const before = await rollbacks();
    const holder = new pg.Client({ connectionString: world.databaseUrl });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [key]);
      probeControl.batchLockKey = key;
      await burst(ids, () => sleep(300));
      // Handled while the lock is still held: the batches gave up waiting and each message ran alone.
      await eventually(async () => (await handledIds(prefix)).length === ids.length, 15_000);
      expect(await rollbacks()).toBeGreaterThan(before);
      expect((await handledIds(prefix)).sort()).toEqual([...ids].sort());
    } finally {
      probeControl.batchLockKey = undefined;
      await holder.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
      await holder.end();
    }
  });

  it('retries a failing handler with growing delays, dead-letters it after N attempts, and replays it', async () => {
    const id = `fail-${randomUUID()}`;
    probeControl.failing.add(id);
    await publish(message(id));

    const admin = new DeadLetterAdmin(world.amqpUrl, world.namespace);
    const parked = await eventually(async () => (await admin.list('followups')).find((d) => d.event_id === id), 15_000);
    expect(parked).toMatchObject({ event_id: id, type: PlatformEvents.ProbeRecorded, reason: 'handler_failed', attempts: 4 });
    expect(parked.error).toContain('probe failure');

    const times = probeControl.attempts.get(id) ?? [];
    expect(times).toHaveLength(4);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    // base 100 ms × 2^(n-1): at least 100, 200, 400 ms apart, each longer than the one before.
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[1]).toBeGreaterThanOrEqual(190);
    expect(gaps[2]).toBeGreaterThanOrEqual(390);
    expect(gaps[2]).toBeGreaterThan(gaps[0]);
    expect(await handled(id)).toBe(0);

    // Listing does not consume: the message is still there.
    expect((await admin.list('followups')).filter((d) => d.event_id === id)).toHaveLength(1);

    probeControl.failing.delete(id);
    const replayed = await admin.replay('followups', [id]);
    expect(replayed).toEqual([id]);
    await eventually(async () => (await handled(id)) === 1);
    expect((await admin.list('followups')).filter((d) => d.event_id === id)).toHaveLength(0);
  });

  it('dead-letters a message whose type no handler serves and keeps consuming the next ones', async () => {
    // A type the service's queue receives (sent straight to it) but has no handler for.
    const strange = message(`strange-${randomUUID()}`, 'platform.probe.unknown');
    channel.sendToQueue(names().queue, Buffer.from(JSON.stringify(strange)), { persistent: true });
    // And one with a routing key nobody is bound to at all: parked by the exchange's alternate exchange.
    const unrouted = message(`unrouted-${randomUUID()}`, 'nobody.listens.here');
    await publish(unrouted);
    const next = `after-${randomUUID()}`;
    await publish(message(next));

    await eventually(async () => (await handled(next)) === 1);
    const admin = new DeadLetterAdmin(world.amqpUrl, world.namespace);
    const parked = await eventually(async () => (await admin.list('followups')).find((d) => d.event_id === strange.event_id));
    expect(parked.reason).toBe('no_handler');

    const got = await eventually(async () => {
      const ch = await conn.createChannel();
      const msg = await ch.get(`${world.namespace}.unrouted`, { noAck: true });
      await ch.close();
      return msg;
    });
    expect(JSON.parse(got.content.toString()).event_id).toBe(unrouted.event_id);
  });

  it('dead-letters an unreadable message and keeps consuming', async () => {
    channel.sendToQueue(names().queue, Buffer.from('{not json'), { persistent: true, messageId: 'garbage-1' });
    const next = `after-garbage-${randomUUID()}`;
    await publish(message(next));
    await eventually(async () => (await handled(next)) === 1);
    const admin = new DeadLetterAdmin(world.amqpUrl, world.namespace);
    const parked = await eventually(async () => (await admin.list('followups')).find((d) => d.reason === 'unreadable'));
    expect(parked.event_id).toBe('garbage-1');
  });
});

/** One inbox claim statement the process sent: its (event_id, handler) pairs. */
type Claim = { pairs: Array<[string, string]> };

/**
 * Records every inbox claim statement of the process (the services run in-process), from the pg
 * client every pool uses: a single message's claim binds two strings, a batch's two arrays.
 */
function recordClaims(): { claims: Claim[]; restore: () => void } {
  const claims: Claim[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
    // A folded round trip (libs/database `FoldedQuery`) carries its statements as steps.
    const steps = (config as { steps?: { sql: string; params?: unknown[] }[] } | undefined)?.steps;
    const statements = steps
      ? steps.map((step) => ({ text: step.sql, params: step.params }))
      : [{ text: typeof config === 'string' ? config : ((config as { text?: string } | undefined)?.text ?? ''), params: (typeof config === 'string' ? values : (config as { values?: unknown } | undefined)?.values) as unknown[] | undefined }];
    for (const { text, params } of statements) {
      if (/INSERT INTO inbox_events/.test(text) && params) {
        const [events, handlers] = params;
        claims.push({ pairs: Array.isArray(events) ? events.map((e, i) => [String(e), String((handlers as unknown[])[i])]) : [[String(events), String(handlers)]] });
      }
    }
    return (original as (...args: unknown[]) => unknown).call(this, config, values, callback);
  } as typeof original;
  return { claims, restore: () => void (pg.Client.prototype.query = original) };
}

describe('BusConnection batches (two handlers of one type)', () => {
  const FIRST = 'ProbeConsumer.onProbe';
  const SECOND = 'ProbeTallyConsumer.onProbe';
  let world: TestWorld;
  let conn: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  let app: ServiceApp;
  let recorder: ReturnType<typeof recordClaims>;

  beforeAll(async () => {
    recorder = recordClaims();
    world = await createTestWorld('consumer_pairs');
    app = await world.start(probeService('followups', world.config(ServiceConfig, { BUS_MAX_ATTEMPTS: '4', BUS_RETRY_BASE_MS: '100' }), true, { tally: true }));
    conn = await amqplib.connect(world.amqpUrl);
    channel = await conn.createConfirmChannel();
  });
  afterAll(async () => {
    recorder.restore();
    await conn.close().catch(() => undefined);
    await world.close();
  });

  const rows = (table: string, prefix: string) => world.sql<{ event_id: string; n: number }>(`SELECT event_id, count(*)::int AS n FROM "${world.schema('followups')}".${table} WHERE event_id LIKE $1 GROUP BY event_id ORDER BY event_id`, [`${prefix}%`]);
  const inbox = (prefix: string) => world.sql<{ event_id: string; handler: string }>(`SELECT event_id, handler FROM "${world.schema('followups')}".inbox_events WHERE event_id LIKE $1 ORDER BY event_id, handler`, [`${prefix}%`]);
  const consumed = async (handler: string, outcome: string) => (await app.get(Metrics).busConsumed.get()).values.find((v) => v.labels.handler === handler && v.labels.outcome === outcome)?.value ?? 0;
  const claimsOf = (prefix: string) => recorder.claims.filter((c) => c.pairs.some(([e]) => e.startsWith(prefix)));
  const once = (ids: string[]) => [...ids].sort().map((event_id) => ({ event_id, n: 1 }));

  it('claims the inbox pairs of a whole batch in one statement: N messages and 2 handlers leave N×2 inbox rows and run each handler once per message', async () => {
    const prefix = `pairs-${randomUUID()}-`;
    const ids = Array.from({ length: 40 }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`);
    probeControl.batches.length = 0;
    let open!: () => void;
    probeControl.gate = new Promise<void>((resolve) => (open = resolve));
    try {
      for (const id of ids) channel.publish(`${world.namespace}.events`, PlatformEvents.ProbeRecorded, Buffer.from(JSON.stringify(message(id))), { persistent: true, messageId: id });
      await channel.waitForConfirms();
      // The first messages hold every transaction slot at the gate; the rest queue up for batches.
      await eventually(() => ids.some((id) => probeControl.attempts.has(id)), 10_000);
      await sleep(300);
    } finally {
      probeControl.gate = undefined;
      open();
    }
    await eventually(async () => (await rows('probe_tallied', prefix)).length === ids.length && (await rows('probe_handled', prefix)).length === ids.length, 15_000);

    expect(await rows('probe_handled', prefix)).toEqual(once(ids));
    expect(await rows('probe_tallied', prefix)).toEqual(once(ids));
    expect(await inbox(prefix)).toEqual([...ids].sort().flatMap((event_id) => [FIRST, SECOND].map((handler) => ({ event_id, handler }))));

    const batches = probeControl.batches.filter((b) => b.every((id) => id.startsWith(prefix)));
    expect(batches.length).toBeGreaterThan(0);
    const batched = new Set(batches.flat());
    const claims = claimsOf(prefix);
    // One statement per batch, with both handlers' pairs of each of its messages, sorted.
    const batchClaims = claims.filter((c) => c.pairs.length > 1);
    expect(batchClaims.map((c) => [...new Set(c.pairs.map(([e]) => e))].sort())).toEqual(expect.arrayContaining(batches.map((b) => [...b].sort())));
    expect(batchClaims).toHaveLength(batches.length);
    for (const c of batchClaims) expect(c.pairs).toEqual([...c.pairs].sort(([e1, h1], [e2, h2]) => (e1 < e2 ? -1 : e1 > e2 ? 1 : h1 < h2 ? -1 : h1 > h2 ? 1 : 0)));
    // A message that ran alone claims per handler, in that handler's own transaction.
    expect(claims.filter((c) => c.pairs.length === 1)).toHaveLength(2 * (ids.length - batched.size));
    process.stdout.write(`inbox claim statements for ${ids.length} messages × 2 handlers: ${claims.length} (${batches.length} batches of ${batches.map((b) => b.length).join('/')}, ${ids.length - batched.size} alone); one per pair would be ${2 * ids.length}\n`);
  });

  /** Runs `messages` as one consumer batch of the service, as if they had queued up (the acks are counted). */
  async function runAsBatch(messages: BusMessage[]): Promise<number> {
    let acks = 0;
    const batch = messages.map((m) => ({
      delivery: { read: () => m, content: () => Buffer.from(JSON.stringify(m)), properties: { headers: {}, messageId: m.event_id, type: m.type }, routingKey: m.type, ack: () => void acks++ },
      message: m,
      settle: () => undefined,
    }));
    // The batch path itself (private): what the consumer runs when these wait for a slot together.
    await (app.get(BusService).connection as unknown as { runBatch(b: unknown[]): Promise<void> }).runBatch(batch);
    return acks;
  }

  it('runs a message repeated in its batch once and counts the copy a duplicate, and runs only the handlers an event already in the inbox lacks', async () => {
    const prefix = `dups-${randomUUID()}-`;
    const [a, b, known] = [`${prefix}a`, `${prefix}b`, `${prefix}known`];
    await world.sql(`INSERT INTO "${world.schema('followups')}".inbox_events (event_id, handler) VALUES ($1, $2)`, [known, FIRST]);
    const before = { firstDup: await consumed(FIRST, 'duplicate'), secondDup: await consumed(SECOND, 'duplicate'), firstHandled: await consumed(FIRST, 'handled'), secondHandled: await consumed(SECOND, 'handled') };
    const rollbacks = async () => (await app.get(Metrics).busBatchRollbacks.get()).values.reduce((n, v) => n + v.value, 0);
    const rollbacksBefore = await rollbacks();
    probeControl.batches.length = 0;

    const acks = await runAsBatch([message(a), message(b), message(a), message(known)]);

    expect(acks).toBe(4);
    expect(await rollbacks()).toBe(rollbacksBefore);
    expect(await rows('probe_handled', prefix)).toEqual(once([a, b]));
    expect(await rows('probe_tallied', prefix)).toEqual(once([a, b, known]));
    expect(await inbox(prefix)).toEqual([a, b, known].sort().flatMap((event_id) => [FIRST, SECOND].map((handler) => ({ event_id, handler }))));
    // The copy of a: a duplicate for both handlers; known: for the first handler only.
    expect(await consumed(FIRST, 'duplicate')).toBe(before.firstDup + 2);
    expect(await consumed(SECOND, 'duplicate')).toBe(before.secondDup + 1);
    expect(await consumed(FIRST, 'handled')).toBe(before.firstHandled + 2);
    expect(await consumed(SECOND, 'handled')).toBe(before.secondHandled + 3);
    // One claim statement, each pair in it once; the preparer saw each message with work once, in order.
    expect(claimsOf(prefix)).toEqual([{ pairs: [a, b, known].sort().flatMap((e) => [FIRST, SECOND].map((h) => [e, h])) }]);
    expect(probeControl.batches).toEqual([[a, b, known]]);
  });

  it('rolls the claims back with a failing batch: each message then runs on its own, every handler once', async () => {
    const prefix = `rollback-${randomUUID()}-`;
    const [ok, failing] = [`${prefix}ok`, `${prefix}failing`];
    probeControl.failing.add(failing);
    try {
      await runAsBatch([message(ok), message(failing)]);
      expect(await rows('probe_handled', prefix)).toEqual(once([ok]));
      expect(await rows('probe_tallied', prefix)).toEqual(once([ok]));
      // The failing one's first handler failed on its own and went to the retry queue; nothing of it is claimed.
      expect(await inbox(prefix)).toEqual([FIRST, SECOND].map((handler) => ({ event_id: ok, handler })));
    } finally {
      probeControl.failing.delete(failing);
    }
    // The retry, now passing, runs both of its handlers.
    await eventually(async () => (await rows('probe_tallied', prefix)).length === 2, 15_000);
    expect(await rows('probe_handled', prefix)).toEqual(once([ok, failing]));
    expect(await rows('probe_tallied', prefix)).toEqual(once([ok, failing]));
  });
});

describe(DeadLetterAdmin.name, () => {
  it('answers an empty list and replays nothing for a service that never declared its queues', async () => {
    const world = await createTestWorld('dlq_missing');
    try {
      const sut = new DeadLetterAdmin(world.amqpUrl, world.namespace);
      await expect(sut.list('abuse')).resolves.toEqual([]);
      await expect(sut.replay('abuse')).resolves.toEqual([]);
    } finally {
      await world.close();
    }
  });
});
