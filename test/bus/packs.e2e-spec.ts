import amqplib from 'amqplib';
import { randomUUID } from 'node:crypto';
import { BusNames, DeadLetterAdmin, PACK_CONTENT_TYPE, packEvents } from '@touchpoint/bus';
import { ServiceConfig } from '@touchpoint/config';
import { type BusMessage, PlatformEvents } from '@touchpoint/contracts';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createTestWorld, duplicateCounts, eventually, type TestWorld } from '@touchpoint/testing';
import { PROBE_WAKE, probeControl, probeService } from './probe.js';

const message = (eventId: string, type: string = PlatformEvents.ProbeRecorded, seq = 1): BusMessage => ({
  event_id: eventId,
  type,
  organization_id: null,
  occurred_at: new Date().toISOString(),
  data: { seq },
});

describe(packEvents.name, () => {
  it('packs each type on its own, in the given order within it, at most `size` to a pack; packs ordered by their first message', () => {
    const a = (i: number) => message(`a${i}`, 'x.a');
    const b = (i: number) => message(`b${i}`, 'x.b');
    const packs = packEvents([a(1), b(1), a(2), a(3), b(2), a(4)], 3);
    expect(packs.map((p) => p.map((x) => x.message.event_id))).toEqual([['a1', 'a2', 'a3'], ['b1', 'b2'], ['a4']]);
    expect(packs.flat().every((x) => x.json === JSON.stringify(x.message))).toBe(true);
  });

  it('sends each message alone with size 1, and starts a new pack before the body passes 256 KiB (a larger message goes alone)', () => {
    expect(packEvents([message('1'), message('2')], 1).map((p) => p.length)).toEqual([1, 1]);
    // Multi-byte text: the limit is on UTF-8 bytes, not on UTF-16 units.
    const big = (id: string) => ({ ...message(id), data: { text: 'é'.repeat(40_000) } });
    const packs = packEvents([big('1'), big('2'), big('3'), big('4'), { ...message('huge'), data: { text: 'x'.repeat(300_000) } }, message('small')], 100);
    expect(packs.map((p) => p.map((x) => x.message.event_id))).toEqual([['1', '2', '3'], ['4'], ['huge'], ['small']]);
    for (const p of packs.filter((x) => x.length > 1)) expect(Buffer.byteLength(`[${p.map((x) => x.json).join(',')}]`)).toBeLessThanOrEqual(256 * 1024);
  });
});

describe('bus packs (relay and consumer, real broker and database)', () => {
  let world: TestWorld;
  let conn: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;
  let consumer: NestFastifyApplication;

  beforeAll(async () => {
    world = await createTestWorld('packs');
    consumer = await world.start(probeService('followups', world.config(ServiceConfig, { BUS_MAX_ATTEMPTS: '3', BUS_RETRY_BASE_MS: '50' }), true));
    conn = await amqplib.connect(world.amqpUrl);
    channel = await conn.createConfirmChannel();
  });
  afterAll(async () => {
    await conn.close().catch(() => undefined);
    await world.close();
  });

  const handled = async (prefix: string) => world.sql<{ event_id: string; n: number }>(`SELECT event_id, count(*)::int AS n FROM "${world.schema('followups')}".probe_handled WHERE event_id LIKE $1 GROUP BY event_id ORDER BY event_id`, [`${prefix}%`]);

  const publishPack = async (events: unknown[], type = PlatformEvents.ProbeRecorded) => {
    channel.publish(`${world.namespace}.events`, type, Buffer.from(JSON.stringify(events)), { persistent: true, contentType: PACK_CONTENT_TYPE, messageId: `pack-${randomUUID()}`, type });
    await channel.waitForConfirms();
  };

  it('relays a burst of events as a few packs of one type each on the wire, and the consumer handles every event once', async () => {
    // A tap on the exchange: what the relay actually sent, beside the service's own queue.
    const tap = `${world.namespace}.tap-${randomUUID()}`;
    const tapChannel = await conn.createChannel();
    await tapChannel.assertQueue(tap, { exclusive: true });
    await tapChannel.bindQueue(tap, `${world.namespace}.events`, PlatformEvents.ProbeRecorded);
    await tapChannel.bindQueue(tap, `${world.namespace}.events`, PROBE_WAKE);

    const producer = await world.start(probeService('outreach', world.config(ServiceConfig, { BUS_PACK_SIZE: '16' }), false));
    const prefix = `relayed-${randomUUID()}-`;
    const outreach = world.schema('outreach');
    // 40 probe events and 5 wake-ups committed together, interleaved, then the relay woken once.
    const rows = Array.from({ length: 45 }, (_, i) => (i % 9 === 4 ? message(`${prefix}w${i}`, PROBE_WAKE) : message(`${prefix}${String(i).padStart(2, '0')}`, PlatformEvents.ProbeRecorded, i)));
    await world.sql(`INSERT INTO "${outreach}".outbox_events (event_id, type, organization_id, payload) SELECT e, t, NULL, p::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS u(e, t, p)`, [
      rows.map((r) => r.event_id),
      rows.map((r) => r.type),
      rows.map((r) => JSON.stringify(r)),
    ]);
    await world.sql(`SELECT pg_notify($1, '')`, [`outbox_${outreach}`]);

    const probes = rows.filter((r) => r.type === PlatformEvents.ProbeRecorded);
    await eventually(async () => (await handled(prefix)).length === probes.length, 15_000);
    expect(await handled(prefix)).toEqual(probes.map((r) => ({ event_id: r.event_id, n: 1 })).sort((x, y) => (x.event_id < y.event_id ? -1 : 1)));
    // A pack's events wait together and share transactions (rows of one transaction share its xmin);
    // taken one by one, each of the 8 free slots would have started one alone.
    const [{ transactions }] = await world.sql<{ transactions: number }>(`SELECT count(DISTINCT xmin::text)::int AS transactions FROM "${world.schema('followups')}".probe_handled WHERE event_id LIKE $1`, [`${prefix}%`]);
    expect(transactions).toBeLessThanOrEqual(6);

    const wire: amqplib.GetMessage[] = [];
    await eventually(async () => {
      for (let msg = await tapChannel.get(tap, { noAck: true }); msg; msg = await tapChannel.get(tap, { noAck: true })) wire.push(msg);
      return wire.reduce((n, m) => n + (m.properties.contentType === PACK_CONTENT_TYPE ? JSON.parse(m.content.toString()).length : 1), 0) === rows.length;
    });
    // 40 + 5 events in at most ceil(40/16) + 1 broker messages, each of one type, that type its routing key.
    expect(wire.length).toBeLessThanOrEqual(4);
    const sent = wire.flatMap((m) => {
      const events = (m.properties.contentType === PACK_CONTENT_TYPE ? JSON.parse(m.content.toString()) : [JSON.parse(m.content.toString())]) as BusMessage[];
      expect(new Set(events.map((e) => e.type))).toEqual(new Set([m.fields.routingKey]));
      if (events.length > 1) expect(m.properties.headers?.['x-touchpoint-pack']).toBe(events.length);
      return events;
    });
    // Within a type, the outbox's order.
    expect(sent.filter((e) => e.type === PlatformEvents.ProbeRecorded).map((e) => e.event_id)).toEqual(probes.map((r) => r.event_id));
    expect(sent.filter((e) => e.type === PROBE_WAKE).map((e) => e.event_id)).toEqual(rows.filter((r) => r.type === PROBE_WAKE).map((r) => r.event_id));
    await tapChannel.close();
    await producer.close();
  });

  it('retries and dead-letters a failing event of a pack on its own, dead-letters a broken one, handles the others once, and acks the pack', async () => {
    const prefix = `poison-${randomUUID()}-`;
    const good = Array.from({ length: 8 }, (_, i) => message(`${prefix}ok${i}`));
    const failing = message(`${prefix}fails`);
    probeControl.failing.add(failing.event_id);
    try {
      await publishPack([...good.slice(0, 3), failing, { type: PlatformEvents.ProbeRecorded, data: {} }, ...good.slice(3)]);
      await eventually(async () => (await handled(prefix)).length === good.length, 15_000);

      const admin = new DeadLetterAdmin(world.amqpUrl, world.namespace);
      const parked = await eventually(async () => (await admin.list('followups')).find((d) => d.event_id === failing.event_id), 15_000);
      // Parked as a message of its own (the admin CLI can list and replay it by id), after its attempts.
      expect(parked).toMatchObject({ type: PlatformEvents.ProbeRecorded, reason: 'handler_failed', attempts: 3 });
      // Entered once in the pack's shared transaction (rolled back; the pack's events then ran alone), then once per attempt.
      expect(probeControl.attempts.get(failing.event_id)).toHaveLength(4);
      const broken = (await admin.list('followups')).filter((d) => d.reason === 'unreadable');
      expect(broken).toHaveLength(1);
      expect(await handled(prefix)).toEqual(good.map((m) => ({ event_id: m.event_id, n: 1 })));

      // The pack was acked: closing the consumer's channel puts nothing back in the queue.
      const names = new BusNames(world.namespace, 'followups');
      await consumer.close();
      const check = await conn.createChannel();
      expect((await check.checkQueue(names.queue)).messageCount).toBe(0);
      await check.close();

      // Replayed once the fault is gone, it is handled like any message.
      probeControl.failing.delete(failing.event_id);
      consumer = await world.start(probeService('followups', world.config(ServiceConfig, { BUS_MAX_ATTEMPTS: '3', BUS_RETRY_BASE_MS: '50' }), true));
      expect(await admin.replay('followups', [failing.event_id])).toEqual([failing.event_id]);
      await eventually(async () => (await handled(prefix)).length === good.length + 1);
    } finally {
      probeControl.failing.delete(failing.event_id);
    }
  });

  it('handles each event of a pack delivered twice once (the inbox), and a pack overlapping an earlier single message', async () => {
    const prefix = `again-${randomUUID()}-`;
    const events = Array.from({ length: 12 }, (_, i) => message(`${prefix}${String(i).padStart(2, '0')}`));
    const before = await duplicateCounts(consumer);
    channel.publish(`${world.namespace}.events`, PlatformEvents.ProbeRecorded, Buffer.from(JSON.stringify(events[5])), { persistent: true, messageId: events[5]!.event_id });
    await publishPack(events);
    await publishPack(events);
    await eventually(async () => {
      const after = await duplicateCounts(consumer);
      return (after.get('ProbeConsumer.onProbe') ?? 0) - (before.get('ProbeConsumer.onProbe') ?? 0) >= events.length + 1;
    }, 15_000);
    expect(await handled(prefix)).toEqual(events.map((m) => ({ event_id: m.event_id, n: 1 })));
  });
});
