import amqp from 'amqp-connection-manager';
import { reportChannelErrors } from '@touchpoint/bus';
import { eventually, TcpProxy, TEST_AMQP_URL } from '@touchpoint/testing';

/**
 * A channel whose opening or setup fails after a (re)connect emits `error` on its ChannelWrapper;
 * unheard, that killed followups, messaging and the dispatcher when the chaos harness cut the
 * broker twice in a few seconds (issue 17). Every channel of our connections reports it instead.
 */
describe(reportChannelErrors.name, () => {
  it('hands a failed channel setup to the callback, and the channel works once its setup succeeds', async () => {
    const broker = new URL(TEST_AMQP_URL);
    const proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
    broker.host = `127.0.0.1:${await proxy.start()}`;
    const errors: string[] = [];
    const sut = reportChannelErrors(amqp.connect([broker.toString()], { reconnectTimeInSeconds: 1 }), (err) => errors.push(err.message));
    let failSetup = true;
    try {
      const channel = sut.createChannel({
        setup: async () => {
          if (failSetup) throw new Error('setup failed mid-reconnect');
        },
      });
      await eventually(() => errors.length > 0, 10_000);
      expect(errors[0]).toBe('setup failed mid-reconnect');

      // The wrapper sets up again on the next connect: a dropped link is what brings one.
      failSetup = false;
      proxy.cut();
      await eventually(() => !sut.isConnected(), 10_000);
      proxy.restore();
      await channel.waitForConnect();
      expect(await channel.checkExchange('amq.topic')).toBeTruthy();
      expect(errors).toHaveLength(1);
    } finally {
      await sut.close();
      await proxy.stop();
    }
  });
});
