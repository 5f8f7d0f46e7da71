import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';

/**
 * Makes every channel `manager` creates from now on report its errors to `onError` instead of
 * crashing the process. amqp-connection-manager's ChannelWrapper emits `error` when opening a
 * channel or running its setup fails after a reconnect (the link dropped again mid-setup): with no
 * listener, Node throws it as an unhandled `error` event and the service dies. The wrapper opens
 * the channel again on the manager's next `connect`, so logging is all that is left to do. Found by
 * the chaos harness: two broker cuts a few seconds apart killed followups, messaging and
 * the dispatcher. Answers `manager`.
 */
export function reportChannelErrors<T extends AmqpConnectionManager>(manager: T, onError: (err: Error, channel: string | undefined) => void): T {
  const create = manager.createChannel.bind(manager);
  manager.createChannel = ((options?: Parameters<AmqpConnectionManager['createChannel']>[0]): ChannelWrapper => {
    const channel = create(options);
    channel.on('error', (err: Error, info?: { name?: string }) => onError(err, info?.name));
    return channel;
  }) as AmqpConnectionManager['createChannel'];
  return manager;
}
