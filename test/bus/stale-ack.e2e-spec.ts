import { randomUUID } from 'node:crypto';
import { ServiceConfig } from '@touchpoint/config';
import { BusService, UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld, eventually, TcpProxy, type TestWorld } from '@touchpoint/testing';
import { probeControl, probeEvent, probeService } from './probe.js';

/**
 * A handler that was running when the broker link dropped finishes after the reconnect: the
 * channel wrapper sends its ack on the new channel with the dead channel's delivery tag, and the
 * broker closes it (406 PRECONDITION_FAILED, unknown delivery tag); amqplib takes the whole
 * connection down with it, and the manager reconnects. The consumer must go on consuming after
 * that, not stay subscribed to nothing while the process looks ready (a suspect of the 10-minute
 * chaos run of seed 1015656272, ruled out by this test: the real cause was the prospect cap).
 */
describe('bus consumer after a handler outlives a broker cut', () => {
  let world: TestWorld;
  let proxy: TcpProxy;
  let open: () => void = () => undefined;

  beforeAll(async () => {
    world = await createTestWorld('staleack');
    const broker = new URL(world.amqpUrl);
    proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
    await proxy.start();
  });
  afterAll(async () => {
    probeControl.gate = undefined;
    open();
    await proxy.stop();
    await world.close();
  });

  it('handles an event published after the late ack', async () => {
    const viaProxy = new URL(world.amqpUrl);
    viaProxy.port = String(proxy.port);
    const consumer = await world.start(probeService('followups', world.config(ServiceConfig, { AMQP_URL: viaProxy.toString() }), true));
    const producer = await world.start(probeService('outreach', world.config(ServiceConfig), false));
    const uow = producer.get(UnitOfWork);
    const bus = consumer.get(BusService);
    const followups = world.schema('followups');
    const handled = async (id: string) => (await world.sql(`SELECT 1 FROM "${followups}".probe_handled WHERE event_id = $1`, [id])).length > 0;
    const run = randomUUID();

    probeControl.gate = new Promise<void>((resolve) => (open = resolve));
    const first = `${run}-held`;
    await uow.run((tx) => tx.publish(probeEvent(first)));
    await eventually(() => (probeControl.attempts.get(first)?.length ?? 0) >= 1, 15_000);

    proxy.cut();
    await eventually(() => !bus.connection.isConnected(), 10_000);
    proxy.restore();
    await eventually(() => bus.connection.isConnected(), 15_000);
    // The consumer subscribes again and the broker gives it the unacked event on the new channel (its
    // inbox claim waits for the first run's transaction).
    await new Promise((r) => setTimeout(r, 3000));

    probeControl.gate = undefined;
    open();
    await eventually(() => handled(first), 15_000);
    await new Promise((r) => setTimeout(r, 1000));

    const next = `${run}-next`;
    await uow.run((tx) => tx.publish(probeEvent(next)));
    await eventually(() => handled(next), 15_000);
  }, 90_000);
});
