import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import { DeadLetterAdmin } from '@touchpoint/bus';
import { ServiceConfig } from '@touchpoint/config';
import { type BusMessage, PlatformEvents } from '@touchpoint/contracts';
import { createTestWorld, eventually, TcpProxy, type TestWorld } from '@touchpoint/testing';
import { probeControl, probeService } from './probe.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A consumer whose database is cut for longer than its retries last: the messages it receives
 * meanwhile wait for the database instead of being dead-lettered, since an outage is not their
 * fault (DESIGN §2: the dead-letter queue is for messages that cannot be handled). Found by the
 * chaos run: a database cut of a few seconds parked an outcome event, and the send it reported
 * stayed `sending` for ever.
 */
describe('BusConnection across a database outage', () => {
  let world: TestWorld;
  let proxy: TcpProxy;
  let conn: amqplib.ChannelModel;
  let channel: amqplib.ConfirmChannel;

  beforeAll(async () => {
    world = await createTestWorld('db_outage');
    const db = new URL(world.databaseUrl);
    proxy = new TcpProxy(db.hostname, Number(db.port || 5432));
    db.host = `127.0.0.1:${await proxy.start()}`;
    // 4 attempts from 100 ms: every counted retry is over within 700 ms.
    await world.start(probeService('followups', world.config(ServiceConfig, { DATABASE_URL: db.toString(), BUS_MAX_ATTEMPTS: '4', BUS_RETRY_BASE_MS: '100' }), true));
    conn = await amqplib.connect(world.amqpUrl);
    channel = await conn.createConfirmChannel();
  });
  afterAll(async () => {
    proxy.restore();
    await conn?.close().catch(() => undefined);
    // The service reaches its database through the proxy: it closes first.
    await world.close();
    await proxy.stop();
  });

  const handled = async (eventId: string) => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${world.schema('followups')}".probe_handled WHERE event_id = $1`, [eventId]))[0].n;
  const message = (eventId: string): BusMessage => ({ event_id: eventId, type: PlatformEvents.ProbeRecorded, organization_id: null, occurred_at: new Date().toISOString(), data: { seq: 1 } });

  it('keeps a message received while the database is unreachable until it is back, never dead-lettered, and handles it once', async () => {
    const id = `outage-${randomUUID()}`;
    proxy.cut();
    try {
      channel.publish(`${world.namespace}.events`, PlatformEvents.ProbeRecorded, Buffer.from(JSON.stringify(message(id))), { persistent: true, messageId: id });
      await channel.waitForConfirms();
      // Three times as long as every counted retry takes.
      await sleep(2_100);
      expect(await new DeadLetterAdmin(world.amqpUrl, world.namespace).list('followups')).toEqual([]);
    } finally {
      proxy.restore();
    }
    await eventually(async () => (await handled(id)) === 1, 15_000);
    expect(await new DeadLetterAdmin(world.amqpUrl, world.namespace).list('followups')).toEqual([]);
  });

  it('still dead-letters a handler that fails on its own after its attempts, with the database up', async () => {
    const id = `broken-${randomUUID()}`;
    probeControl.failing.add(id);
    try {
      channel.publish(`${world.namespace}.events`, PlatformEvents.ProbeRecorded, Buffer.from(JSON.stringify(message(id))), { persistent: true, messageId: id });
      await channel.waitForConfirms();
      const parked = await eventually(async () => (await new DeadLetterAdmin(world.amqpUrl, world.namespace).list('followups')).find((d) => d.event_id === id), 15_000);
      expect(parked).toMatchObject({ reason: 'handler_failed', attempts: 4 });
      expect(probeControl.attempts.get(id)).toHaveLength(4);
    } finally {
      probeControl.failing.delete(id);
    }
    expect(await handled(id)).toBe(0);
  });
});
