import amqplib from 'amqplib';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { BusNames, DeadLetterAdmin } from '@touchpoint/bus';
import { ServiceConfig } from '@touchpoint/config';
import { type BusMessage, PlatformEvents } from '@touchpoint/contracts';
import { createTestWorld, duplicateCounts, eventually, type ServiceApp, type TestWorld, untilRedeliveryDiscarded } from '@touchpoint/testing';
import { Metrics } from '@touchpoint/observability';
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
