import type { Channel } from 'amqplib';

/** Retry delay before attempt `attempt + 1` (1-based attempt that just failed), ms: base × 2^(attempt-1). */
export const retryDelayMs = (baseMs: number, attempt: number): number => baseMs * 2 ** (attempt - 1);

/**
 * Names of a service's exchanges and queues. Every name starts with the namespace, so a test file
 * (or a second deployment on one broker) gets a world of its own.
 */
export class BusNames {
  constructor(
    readonly namespace: string,
    readonly service: string,
    readonly queueType: 'quorum' | 'classic' = 'quorum',
  ) {}

  /** Arguments of a durable work or dead-letter queue. */
  get durableQueueArguments(): Record<string, unknown> {
    return { 'x-queue-type': this.queueType };
  }

  /** Topic exchange for every event and command; routing key = message type. */
  get eventsExchange(): string {
    return `${this.namespace}.events`;
  }
  /** Fanout exchange receiving what matched no binding (the events exchange's alternate exchange). */
  get unroutedExchange(): string {
    return `${this.namespace}.unrouted`;
  }
  /** Queue parking messages whose type no service subscribes to. */
  get unroutedQueue(): string {
    return `${this.namespace}.unrouted`;
  }
  /** The service's work queue, bound to the types it handles. */
  get queue(): string {
    return `${this.namespace}.${this.service}`;
  }
  /** Parked messages of this service: retries exhausted, no handler, or unreadable. */
  get deadLetterQueue(): string {
    return `${this.namespace}.${this.service}.dlq`;
  }
  /** Retry queue holding a message for `retryDelayMs(base, attempt)` before it returns to `queue`. */
  retryQueue(attempt: number): string {
    return `${this.namespace}.${this.service}.retry.${attempt}`;
  }
  /** Queue holding wake-ups for `delayMs` before they return to `queue`. */
  delayQueue(delayMs: number): string {
    return `${this.namespace}.${this.service}.delay.${delayMs}`;
  }
  /** Request queue of the service's RPC server. */
  get rpcQueue(): string {
    return BusNames.rpcQueueOf(this.namespace, this.service);
  }
  static rpcQueueOf(namespace: string, service: string): string {
    return `${namespace}.${service}.rpc`;
  }
}

/** Declares the shared exchanges (idempotent; every process does it at start-up and on reconnect). */
export async function assertSharedTopology(channel: Channel, names: BusNames): Promise<void> {
  await channel.assertExchange(names.unroutedExchange, 'fanout', { durable: true });
  await channel.assertQueue(names.unroutedQueue, { durable: true, arguments: names.durableQueueArguments });
  await channel.bindQueue(names.unroutedQueue, names.unroutedExchange, '');
  await channel.assertExchange(names.eventsExchange, 'topic', {
    durable: true,
    arguments: { 'alternate-exchange': names.unroutedExchange },
  });
}

/** Declares a consuming service's queue, bindings, retry queues and dead-letter queue. */
export async function assertServiceTopology(channel: Channel, names: BusNames, types: string[], options: { maxAttempts: number; retryBaseMs: number }): Promise<void> {
  await assertSharedTopology(channel, names);
  await channel.assertQueue(names.queue, { durable: true, arguments: names.durableQueueArguments });
  await channel.assertQueue(names.deadLetterQueue, { durable: true, arguments: names.durableQueueArguments });
  for (const type of types) await channel.bindQueue(names.queue, names.eventsExchange, type);
  // One retry queue per attempt, each with a queue-level TTL: a per-message TTL would make a short
  // delay wait behind a long one at the head of a shared queue.
  for (let attempt = 1; attempt < options.maxAttempts; attempt++) {
    await channel.assertQueue(names.retryQueue(attempt), {
      durable: true,
      arguments: {
        'x-message-ttl': retryDelayMs(options.retryBaseMs, attempt),
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': names.queue,
      },
    });
  }
}

/** Declares (on demand) the delay queue for one delay; it deletes itself when unused for a minute. */
export async function assertDelayQueue(channel: Channel, names: BusNames, delayMs: number): Promise<string> {
  const queue = names.delayQueue(delayMs);
  await channel.assertQueue(queue, {
    durable: true,
    arguments: {
      'x-message-ttl': delayMs,
      'x-expires': delayMs + 60_000,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': names.queue,
    },
  });
  return queue;
}
