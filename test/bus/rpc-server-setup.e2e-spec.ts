import amqplib from 'amqplib';
import amqp from 'amqp-connection-manager';
import { randomUUID } from 'node:crypto';
import { reportLostAnswers, TouchpointRmqServer } from '@touchpoint/runtime';
import { eventually, TcpProxy, TEST_AMQP_URL } from '@touchpoint/testing';

/**
 * The RPC server's channel set-up fails where the connection manager hears it, never as a promise
 * nobody awaits: Nest's `ServerRMQ.setupChannel` starts its consumer without awaiting it, so a
 * consume the broker refused (here: a queue that does not exist; in the chaos run, issue 17: the
 * link cut before the broker confirmed the consumer) rejected unheard and Node killed outreach and
 * messaging. Against the real broker.
 */
describe('TouchpointRmqServer.setupChannel', () => {
  it('rejects when the broker refuses its consumer, and leaves no unhandled rejection', async () => {
    const connection = await amqplib.connect(TEST_AMQP_URL);
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      const channel = await connection.createConfirmChannel();
      channel.on('error', () => undefined);
      const sut = new TouchpointRmqServer({ urls: [TEST_AMQP_URL], queue: `missing-${randomUUID()}`, noAssert: true }, async () => undefined);
      const outcome = await sut
        .setupChannel(channel, () => undefined)
        .then(
          () => 'set up',
          (err: Error) => err.message,
        );
      // Long enough for the broker's refusal to arrive either way.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(outcome).toMatch(/NOT_FOUND/);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listener);
      await connection.close().catch(() => undefined);
    }
  });
});

/**
 * Nest's RPC server sends each answer with the channel's `sendToQueue` and drops the promise: an
 * answer still unconfirmed when the broker link closes rejected unheard and killed the dispatcher
 * in the chaos run (issue 17). The server's channels hand that failure to a log line instead.
 */
describe(reportLostAnswers.name, () => {
  it('hands an answer the broker never confirmed to the callback when the link closes, and leaves no unhandled rejection', async () => {
    const broker = new URL(TEST_AMQP_URL);
    const proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
    broker.host = `127.0.0.1:${await proxy.start()}`;
    const lost: string[] = [];
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    const sut = reportLostAnswers(amqp.connect([broker.toString()], { reconnectTimeInSeconds: 1 }), (err) => lost.push(err.message));
    try {
      const queue = `answers-${randomUUID()}`;
      const channel = sut.createChannel({ setup: (c: amqplib.ConfirmChannel) => c.assertQueue(queue, { autoDelete: true }) });
      channel.on('error', () => undefined);
      await channel.waitForConnect();
      // As Nest's ServerRMQ.sendMessage does: the promise is dropped.
      void channel.sendToQueue(queue, Buffer.from('{"response":"ok"}'));
      proxy.cut();
      await eventually(() => lost.length > 0, 10_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(lost).toEqual(['channel closed']);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listener);
      await sut.close();
      await proxy.stop();
    }
  });
});
