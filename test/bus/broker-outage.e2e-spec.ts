import { randomUUID } from 'node:crypto';
import { ServiceConfig } from '@touchpoint/config';
import { BusService, UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld, eventually, TcpProxy, type TestWorld } from '@touchpoint/testing';
import { probeEvent, probeService } from './probe.js';

describe('bus across a broker outage', () => {
  let world: TestWorld;
  let proxy: TcpProxy;

  beforeAll(async () => {
    world = await createTestWorld('outage');
    const broker = new URL(world.amqpUrl);
    proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
    await proxy.start();
  });
  afterAll(async () => {
    await proxy.stop();
    await world.close();
  });

  it('delivers every event written while the broker was unreachable, each handled once', async () => {
    const viaProxy = new URL(world.amqpUrl);
    viaProxy.port = String(proxy.port);
    const overrides = { AMQP_URL: viaProxy.toString() };
    await world.start(probeService('followups', world.config(ServiceConfig, overrides), true));
    const producer = await world.start(probeService('outreach', world.config(ServiceConfig, overrides), false));
    const uow = producer.get(UnitOfWork);
    const bus = producer.get(BusService);
    const run = randomUUID();

    // Some before, many during, some after the outage.
    const ids = Array.from({ length: 300 }, (_, i) => `${run}-${i}`);
    const write = (from: number, to: number) => Promise.all(ids.slice(from, to).map((id, i) => uow.run((tx) => tx.publish(probeEvent(id, from + i)))));

    await write(0, 50);
    proxy.cut();
    await eventually(() => !bus.connection.isConnected(), 10_000);
    await write(50, 250);
    await new Promise((r) => setTimeout(r, 1500));
    const outreach = world.schema('outreach');
    const [{ pending }] = await world.sql<{ pending: number }>(`SELECT count(*)::int AS pending FROM "${outreach}".outbox_events WHERE published_at IS NULL`);
    expect(pending).toBeGreaterThan(0);

    proxy.restore();
    await write(250, 300);
    const followups = world.schema('followups');
    await eventually(async () => {
      const [{ n }] = await world.sql<{ n: number }>(`SELECT count(DISTINCT event_id)::int AS n FROM "${followups}".probe_handled WHERE event_id LIKE $1`, [`${run}-%`]);
      return n === ids.length;
    }, 30_000);
    const [{ total }] = await world.sql<{ total: number }>(`SELECT count(*)::int AS total FROM "${followups}".probe_handled WHERE event_id LIKE $1`, [`${run}-%`]);
    expect(total).toBe(ids.length);
    const [{ left }] = await world.sql<{ left: number }>(`SELECT count(*)::int AS left FROM "${outreach}".outbox_events WHERE published_at IS NULL`);
    expect(left).toBe(0);
  });
});
