import amqplib from 'amqplib';
import { randomUUID } from 'node:crypto';
import { TouchpointRmqServer } from '@touchpoint/runtime';
import { TEST_AMQP_URL } from '@touchpoint/testing';

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
