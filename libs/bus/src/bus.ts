import { createHash } from 'node:crypto';
import amqp, { type AmqpConnectionManager, type ChannelWrapper } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage, MessageProperties } from 'amqplib';
import type { DataSource } from 'typeorm';
import type { BusMessage } from '@touchpoint/contracts';
import { isDatabaseUnreachable, type Tx, runInTransaction, genericPlan } from '@touchpoint/database';
import { AppError, ErrorCode, isRetryable } from '@touchpoint/errors';
import type { Logger, Metrics } from '@touchpoint/observability';
import { truncateText } from '@touchpoint/text';
import { assertDelayQueue, assertServiceTopology, assertSharedTopology, BusNames } from './topology.js';
import { reportChannelErrors } from './channel-errors.js';
import type { BusMessageFilter } from './decorators.js';

export type BusHandler = (message: BusMessage, tx: Tx) => Promise<void>;
/** Runs first in a consumer batch of its type, with the batch's messages (`BeforeBusBatch`). */
export type BusBatchPreparer = (messages: BusMessage[], tx: Tx) => Promise<void>;

export interface BusOptions {
  service: string;
  schema: string;
  amqpUrl: string;
  namespace: string;
  maxAttempts: number;
  retryBaseMs: number;
  prefetch: number;
  queueType?: 'quorum' | 'classic';
  /** Most messages one consumer transaction takes when they queue up; 1 (the default) turns batching off. */
  batchSize?: number;
  /**
   * Most events of one type the relay puts in one broker message (a pack, `PACK_CONTENT_TYPE`);
   * 1 publishes each event on its own. Default 1.
   */
  packSize?: number;
  /** Consumer transactions at once (each holds a pool connection); default 8. */
  transactionSlots?: number;
  /**
   * Longest lock wait of a batch's transaction, ms (0: PostgreSQL's own, i.e. none, and deadlocks
   * found after `deadlock_timeout`). A batch that waits longer is rolled back and its messages run
   * one by one, which they would do after a deadlock anyway, only sooner.
   */
  batchLockTimeoutMs?: number;
}

/** A registered handler: its name (`Class.method`, the inbox key), the method and its `when`. */
interface Handler {
  name: string;
  fn: BusHandler;
  when?: BusMessageFilter;
}

/**
 * One event as the consumer handles it: a broker message of its own, or one event of a pack. `read`
 * answers the event as JSON gave it (a pack's event is parsed once, with its pack). Its retry and
 * dead-letter copies are made from `content()` and `properties` (an event of a pack goes there as a
 * message of its own, serialized only then); `ack` settles it (a pack is acked once every one of its
 * events is).
 */
interface Delivery {
  read: () => unknown;
  content: () => Buffer;
  properties: MessageProperties;
  routingKey: string;
  ack: () => void;
}

/** A consumed event waiting for a transaction slot. */
interface Waiting {
  delivery: Delivery;
  message: BusMessage;
  settle: () => void;
}

/**
 * Content type of a pack: a JSON array of bus messages of one type, published as one broker
 * message with that type as its routing key, so it reaches the queues each of its events would
 * have reached. A consumer runs its events as if each had come alone (inbox, retries and dead
 * letters per event) and acks the pack once all are settled; a redelivered pack is deduplicated
 * event by event by the inbox. Packs cut the broker's per-message work (publish, confirm, route,
 * deliver, ack) and the services' frames, which cost more than the events' bytes.
 */
export const PACK_CONTENT_TYPE = 'application/vnd.touchpoint.pack+json';
/** Header giving how many events a pack holds (for operators reading a queue). */
const PACK_HEADER = 'x-touchpoint-pack';
/** Largest body a pack grows to, bytes, before the next event starts another one. */
const PACK_MAX_BYTES = 256 * 1024;

/** One inbox pair as a map key (a handler name, `Class.method`, holds no NUL). */
const pairKey = (eventId: string, handler: string): string => `${eventId}\u0000${handler}`;

/**
 * Whether `handler` takes `message`. A `when` that throws on a payload it did not expect accepts:
 * the handler then runs and its own checks decide, so a faulty filter never drops a message unseen.
 */
function accepts(handler: Handler, message: BusMessage): boolean {
  if (!handler.when) return true;
  try {
    return handler.when(message);
  } catch {
    return true;
  }
}

/** Header carrying how many times a message has been attempted by this service. */
const ATTEMPT_HEADER = 'x-touchpoint-attempt';
/** Retries a message had while its handler could not reach the database (not counted as attempts). */
const OUTAGE_HEADER = 'x-touchpoint-outage-retries';

/**
 * The broker side of the bus for one service (DESIGN §2): one connection that reconnects on its
 * own, a confirm channel for publishing, and the consumer that runs handlers with inbox dedupe,
 * retry queues and a dead-letter queue.
 */
export class BusConnection {
  readonly names: BusNames;
  private readonly connection: AmqpConnectionManager;
  readonly publisher: ChannelWrapper;
  private consumer?: ChannelWrapper;
  private readonly handlers = new Map<string, Handler[]>();
  private readonly preparers = new Map<string, BusBatchPreparer>();
  private readonly delayQueues = new Set<number>();
  private connected = false;
  private stopping = false;
  private inFlight = 0;
  private readonly waiting: Waiting[] = [];
  private busySlots = 0;

  constructor(
    private readonly options: BusOptions,
    private readonly dataSource: DataSource,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {
    this.names = new BusNames(options.namespace, options.service, options.queueType);
    // An alert on `increase(…dead_lettered_total[…]) > 0` needs the series before the first dead letter.
    this.metrics.zeroDeadLetters(this.names.deadLetterQueue);
    this.connection = reportChannelErrors(
      amqp.connect([options.amqpUrl], {
        heartbeatIntervalInSeconds: 5,
        reconnectTimeInSeconds: 1,
        connectionOptions: { clientProperties: { connection_name: `touchpoint:${options.service}` } },
      }),
      (err, channel) => this.logger.warn({ event: 'bus.channel_error', channel, err: err.message }, 'broker channel failed; reopened on the next connect'),
    );
    this.connection.on('connect', () => {
      this.connected = true;
      this.logger.info({ event: 'bus.connected' }, 'connected to the broker');
    });
    this.connection.on('disconnect', ({ err }) => {
      this.connected = false;
      if (!this.stopping) this.logger.warn({ event: 'bus.disconnected', err: err?.message }, 'broker connection lost; reconnecting');
    });
    this.publisher = this.connection.createChannel({
      confirm: true,
      publishTimeout: 15_000,
      setup: async (channel: Channel) => {
        await assertSharedTopology(channel, this.names);
        await channel.assertQueue(this.names.deadLetterQueue, { durable: true, arguments: this.names.durableQueueArguments });
      },
    });
  }

  /** True while the broker connection is up. */
  isConnected(): boolean {
    return this.connected;
  }

  /** Waits until the publisher channel is set up (topology declared), at most `timeoutMs`. */
  async waitForConnect(timeoutMs = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.publisher.waitForConnect(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`broker not reachable at ${redact(this.options.amqpUrl)}`)), timeoutMs);
        }),
      ]);
    } finally {
      // A pending deadline would keep a stopped process (or a finished jest run) alive.
      clearTimeout(timer);
    }
  }

  /** Registers the one preparer of consumer batches of `type` (see `BeforeBusBatch`); call before `startConsuming`. */
  addBatchPreparer(type: string, fn: BusBatchPreparer): void {
    if (this.preparers.has(type)) throw new Error(`a batch preparer for ${type} is registered already`);
    this.preparers.set(type, fn);
  }

  /**
   * Registers a handler for one message type; call before `startConsuming`. With `when`, only the
   * messages it accepts reach the handler (`OnBusMessageOptions.when`).
   */
  addHandler(type: string, name: string, fn: BusHandler, options: { when?: BusMessageFilter } = {}): void {
    const list = this.handlers.get(type) ?? [];
    list.push({ name, fn, when: options.when });
    this.handlers.set(type, list);
    this.metrics.zeroHandler(name);
  }

  get handledTypes(): string[] {
    return [...this.handlers.keys()];
  }

  /** Declares the service's queues and starts consuming (also after every reconnect). */
  async startConsuming(): Promise<void> {
    if (this.consumer || this.handlers.size === 0) return;
    const types = this.handledTypes;
    this.consumer = this.connection.createChannel({
      confirm: false,
      // The prefetch is set here, awaited, and not as a `consume` option: the wrapper issues that one
      // without awaiting it, and a link that drops before the broker answered it rejected a promise
      // nobody listened to, which kills the process (the chaos harness).
      setup: async (channel: Channel) => {
        await assertServiceTopology(channel, this.names, types, this.options);
        await channel.prefetch(this.options.prefetch);
      },
    });
    const consumer = this.consumer;
    await consumer.waitForConnect();
    // The wrapper re-subscribes after a reconnect (after the set-up ran again); acks on a dead
    // channel are dropped and the broker redelivers, which the inbox makes harmless.
    await consumer.consume(this.names.queue, (msg) => this.onMessage(consumer, msg));
  }

  /**
   * Publishes already-committed outbox rows and resolves when the broker has confirmed all of
   * them (batched confirms). Rejects if any is not confirmed.
   */
  async publishConfirmed(messages: BusMessage[]): Promise<void> {
    await Promise.all(
      packEvents(messages, this.options.packSize ?? 1).map((pack) => {
        const first = pack[0]!.message;
        const single = pack.length === 1;
        return this.publisher.publish(this.names.eventsExchange, first.type, Buffer.from(single ? pack[0]!.json : `[${pack.map((p) => p.json).join(',')}]`), {
          persistent: true,
          messageId: amqpMessageId(single ? first.event_id : `pack:${first.event_id}`),
          contentType: single ? 'application/json' : PACK_CONTENT_TYPE,
          timestamp: Math.floor(Date.parse(first.occurred_at) / 1000),
          type: first.type,
          ...(single ? {} : { headers: { [PACK_HEADER]: pack.length } }),
        });
      }),
    );
  }

  /**
   * Sends a wake-up to this service's own queue after `delayMs` (rounded up to 100 ms). A wake-up is
   * a hint, not a fact: it skips the outbox, and a lost one only costs latency (DESIGN §1).
   */
  async publishDelayed(message: BusMessage, delayMs: number): Promise<void> {
    const bucket = Math.max(100, Math.ceil(delayMs / 100) * 100);
    const queue = this.names.delayQueue(bucket);
    if (!this.delayQueues.has(bucket)) {
      await this.publisher.addSetup((channel: Channel) => assertDelayQueue(channel, this.names, bucket));
      this.delayQueues.add(bucket);
    }
    await this.publisher.sendToQueue(queue, Buffer.from(JSON.stringify(message)), {
      persistent: true,
      messageId: amqpMessageId(message.event_id),
      contentType: 'application/json',
      type: message.type,
    });
  }

  private async onMessage(channel: ChannelWrapper, msg: ConsumeMessage): Promise<void> {
    this.inFlight++;
    try {
      const deliveries = this.unpack(channel, msg);
      const readable: Array<{ delivery: Delivery; message: BusMessage }> = [];
      for (const delivery of deliveries) {
        const message = await this.readable(delivery);
        if (message) readable.push({ delivery, message });
      }
      // A pack's events wait together, so that they share transactions instead of each taking a free slot alone.
      const settled = readable.map(({ delivery, message }) => new Promise<void>((settle) => this.waiting.push({ delivery, message, settle })));
      this.startBatches();
      await Promise.all(settled);
    } catch (err) {
      // Only a broker failure gets here (republish not confirmed): leave the message unacked so the
      // broker redelivers it after the channel closes (a pack: every event of it); the inbox makes
      // that harmless.
      this.logger.error({ event: 'bus.consume_failed', err: (err as Error).message }, 'could not settle a message');
    } finally {
      this.inFlight--;
    }
  }

  /**
   * The events of a broker message: itself, or each event of a pack as a delivery of its own that
   * acks the pack when the last of them is settled. A pack that is not a JSON array is one
   * unreadable delivery (dead-lettered whole).
   */
  private unpack(channel: ChannelWrapper, msg: ConsumeMessage): Delivery[] {
    const whole: Delivery = { read: () => JSON.parse(msg.content.toString('utf8')), content: () => msg.content, properties: msg.properties, routingKey: msg.fields.routingKey, ack: () => channel.ack(msg) };
    if (msg.properties.contentType !== PACK_CONTENT_TYPE) return [whole];
    let events: unknown;
    try {
      events = JSON.parse(msg.content.toString('utf8'));
    } catch {
      return [whole];
    }
    if (!Array.isArray(events) || events.length === 0) return [whole];
    let unsettled = events.length;
    const { [PACK_HEADER]: _count, ...headers } = msg.properties.headers ?? {};
    return events.map((event: unknown) => {
      const eventId = (event as Partial<BusMessage> | null)?.event_id;
      return {
        read: () => event,
        content: () => Buffer.from(JSON.stringify(event)),
        properties: { ...msg.properties, contentType: 'application/json', messageId: typeof eventId === 'string' ? amqpMessageId(eventId) : undefined, headers },
        routingKey: msg.fields.routingKey,
        ack: () => {
          if (--unsettled === 0) channel.ack(msg);
        },
      };
    });
  }

  /** The message, or undefined when it was unreadable or had no handler here (dead-lettered and acked). */
  private async readable(delivery: Delivery): Promise<BusMessage | undefined> {
    let message: BusMessage;
    try {
      message = delivery.read() as BusMessage;
      if (typeof message?.event_id !== 'string' || typeof message?.type !== 'string') throw new Error('missing event_id or type');
    } catch (err) {
      await this.deadLetter(delivery, 'unreadable', (err as Error).message);
      delivery.ack();
      return undefined;
    }
    if (!this.handlers.get(message.type)?.length) {
      this.logger.warn({ event: 'bus.no_handler', type: message.type, event_id: message.event_id }, 'no handler; dead-lettered');
      await this.deadLetter(delivery, ErrorCode.NoHandler, `no handler for ${message.type} in ${this.options.service}`);
      delivery.ack();
      return undefined;
    }
    return message;
  }

  /**
   * Runs waiting messages in free transaction slots: the messages waiting when a slot frees up (at
   * most `batchSize`, see `takeBatch`) go together in one transaction.
   */
  private startBatches(): void {
    const slots = this.options.transactionSlots ?? 8;
    while (this.waiting.length > 0 && this.busySlots < slots) {
      const batch = this.takeBatch(Math.max(1, this.options.batchSize ?? 1));
      this.busySlots++;
      void this.runBatch(batch).finally(() => {
        this.busySlots--;
        for (const item of batch) item.settle();
        this.startBatches();
      });
    }
  }

  /**
   * The oldest waiting message and the next waiting ones of its type, at most `size`. One type per
   * batch: handlers of different types lock the same rows in different orders (a message's
   * acceptance locks it before its statuses do, a status batch locks by provider id), and two
   * concurrent batches mixing them deadlock. Messages of other types keep their places.
   */
  private takeBatch(size: number): Waiting[] {
    const type = this.waiting[0]!.message.type;
    const batch: Waiting[] = [];
    for (let i = 0; i < this.waiting.length && batch.length < size;) {
      if (this.waiting[i]!.message.type === type) batch.push(...this.waiting.splice(i, 1));
      else i++;
    }
    return batch;
  }

  /**
   * One message: its handlers, each in its own transaction (the retry rules below). Several: one
   * transaction and one commit for all of them, acked after it: the inbox pairs of every message and
   * handler claimed in one statement (`claimBatch`), the preparer, then each claimed pair's handler
   * in the messages' order (a handler whose `when` rejects a message is neither claimed nor run for
   * it, see `plan`); if anything in it fails, it is rolled back (the claims with it) and each
   * message runs again on its own, so a failure is retried or dead-lettered for that message alone
   * and the others are not held back.
   */
  private async runBatch(batch: Waiting[]): Promise<void> {
    const planned = this.plan(batch);
    if (planned.length > 1) {
      const outcomes: { handler: string; handled: boolean; message: BusMessage }[] = [];
      let committed = false;
      try {
        await runInTransaction(
          this.dataSource,
          this.options.schema,
          async (tx) => {
            const claimed = await this.claimBatch(tx, planned);
            // One type per batch (takeBatch). The preparer gets each message with a pair to run, once.
            const work = new Map<string, BusMessage>();
            for (const { message, handlers } of planned) if (handlers.some((h) => claimed.has(pairKey(message.event_id, h.name)))) work.set(message.event_id, work.get(message.event_id) ?? message);
            const prepare = this.preparers.get(batch[0]!.message.type);
            if (prepare && work.size > 0) await prepare([...work.values()], tx);
            for (const { message, handlers } of planned) {
              for (const handler of handlers) {
                // Taking the key out makes a second copy of the message in this batch a duplicate.
                const handled = claimed.delete(pairKey(message.event_id, handler.name));
                if (handled) await handler.fn(message, tx);
                outcomes.push({ handler: handler.name, handled, message });
              }
            }
          },
          { lockTimeoutMs: this.options.batchLockTimeoutMs },
        );
        committed = true;
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        this.metrics.busBatchRollbacks.inc({ reason: code === '55P03' ? 'lock_timeout' : code === '40P01' ? 'deadlock' : 'error' });
        this.logger.info({ event: 'bus.batch_rolled_back', type: batch[0]!.message.type, messages: planned.length, err: (err as Error).message, code }, 'consumer batch rolled back; its messages run one by one');
      }
      if (committed) {
        for (const o of outcomes) this.countHandled(o.handler, o.handled, o.message);
        for (const { delivery } of planned) delivery.ack();
        return;
      }
    }
    await Promise.all(planned.map(({ delivery, message, handlers }) => this.process(delivery, message, handlers).catch((err: Error) => this.logger.error({ event: 'bus.consume_failed', err: err.message }, 'could not settle a message'))));
  }

  /**
   * Each message of a batch with the handlers whose `when` accepts it; the other handlers count it
   * `skipped`. A message no handler accepts is acked here and left out: no transaction, no inbox
   * row (there is nothing to do once, so nothing to remember).
   */
  private plan(batch: Waiting[]): Array<Waiting & { handlers: Handler[] }> {
    const planned: Array<Waiting & { handlers: Handler[] }> = [];
    for (const item of batch) {
      const handlers: Handler[] = [];
      for (const handler of this.handlers.get(item.message.type) ?? []) {
        if (accepts(handler, item.message)) handlers.push(handler);
        else this.metrics.busConsumed.inc({ handler: handler.name, outcome: 'skipped' });
      }
      if (handlers.length > 0) planned.push({ ...item, handlers });
      else item.delivery.ack();
    }
    return planned;
  }

  /**
   * Claims every `(event_id, handler)` pair of a batch's messages (the handlers that accept each)
   * in the inbox with one statement; answers the pairs this transaction claimed (`pairKey`), the
   * others being duplicates. The pairs go in one sorted order, without repeats: a key another
   * uncommitted transaction holds makes the insert wait for it, and two batches claiming
   * overlapping pairs in different orders would wait for each other. Claiming first, before the
   * preparer locks anything, also keeps a batch that waits here from holding the rows the other
   * one needs.
   */
  private async claimBatch(tx: Tx, planned: Array<{ message: BusMessage; handlers: Handler[] }>): Promise<Set<string>> {
    const pairs = new Map<string, [string, string]>();
    for (const { message, handlers } of planned) for (const h of handlers) pairs.set(pairKey(message.event_id, h.name), [message.event_id, h.name]);
    // The keys sort as (event_id, handler) would: NUL sorts before every other character.
    const sorted = [...pairs.keys()].sort().map((key) => pairs.get(key)!);
    const rows = await tx.query<{ event_id: string; handler: string }>(
      genericPlan(`INSERT INTO inbox_events (event_id, handler)
       SELECT event_id, handler FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS claim (event_id, handler, n) ORDER BY n
       ON CONFLICT DO NOTHING
       RETURNING event_id, handler`),
      [sorted.map(([e]) => e), sorted.map(([, h]) => h)],
    );
    return new Set(rows.map((r) => pairKey(r.event_id, r.handler)));
  }

  private countHandled(handler: string, handled: boolean, message: BusMessage): void {
    this.metrics.busConsumed.inc({ handler, outcome: handled ? 'handled' : 'duplicate' });
    if (!handled) return;
    const ageSeconds = (Date.now() - Date.parse(message.occurred_at)) / 1000;
    if (Number.isFinite(ageSeconds)) this.metrics.busHandleSeconds.observe({ handler }, Math.max(0, ageSeconds));
  }

  /** One message, each of `handlers` (those that accept it) in its own transaction. */
  private async process(delivery: Delivery, message: BusMessage, handlers: Handler[]): Promise<void> {
    const { properties } = delivery;
    const attempt = Number(properties.headers?.[ATTEMPT_HEADER] ?? 0) + 1;
    for (const handler of handlers) {
      try {
        const handled = await runInTransaction(this.dataSource, this.options.schema, (tx) => this.claimAndHandle(tx, handler.name, handler.fn, message));
        this.countHandled(handler.name, handled, message);
      } catch (err) {
        this.metrics.busConsumed.inc({ handler: handler.name, outcome: 'failed' });
        if (this.options.maxAttempts > 1 && isDatabaseUnreachable(err)) {
          // An outage is not the message's fault: it waits for the database, never dead-lettered
          // for it (a cut longer than the retries would otherwise park a stop or an outcome, and
          // nothing would ever apply it). The attempt is not counted; the waits grow to the
          // longest retry delay and stay there.
          const outages = Number(properties.headers?.[OUTAGE_HEADER] ?? 0) + 1;
          this.logger.warn(
            { event: 'bus.handler_waiting_for_database', handler: handler.name, type: message.type, event_id: message.event_id, organization_id: message.organization_id, outage_retries: outages, err: (err as Error).message },
            'database unreachable; retrying later, attempt not counted',
          );
          await this.publisher.sendToQueue(this.names.retryQueue(Math.min(outages, this.options.maxAttempts - 1)), delivery.content(), {
            ...properties,
            headers: { ...properties.headers, [OUTAGE_HEADER]: outages },
          });
          this.metrics.busRetried.inc({ handler: handler.name });
          delivery.ack();
          return;
        }
        const retry = isRetryable(err) && attempt < this.options.maxAttempts;
        const logFields = {
          event: retry ? 'bus.handler_retry' : 'bus.handler_dead_lettered',
          handler: handler.name,
          type: message.type,
          event_id: message.event_id,
          organization_id: message.organization_id,
          attempt,
          err: (err as Error).message,
          code: err instanceof AppError ? err.code : undefined,
        };
        if (retry) {
          this.logger.warn(logFields, 'handler failed; retrying later');
          await this.publisher.sendToQueue(this.names.retryQueue(attempt), delivery.content(), {
            ...properties,
            headers: { ...properties.headers, [ATTEMPT_HEADER]: attempt },
          });
          this.metrics.busRetried.inc({ handler: handler.name });
        } else {
          this.logger.error(logFields, 'handler failed; dead-lettered');
          await this.deadLetter(delivery, 'handler_failed', (err as Error).message, { handler: handler.name, attempt });
        }
        // Handlers that already ran are skipped on the retry by the inbox.
        delivery.ack();
        return;
      }
    }
    delivery.ack();
  }

  /** Claims `(event_id, handler)` in the inbox, then runs the handler; false for a duplicate. */
  private async claimAndHandle(tx: Tx, name: string, fn: BusHandler, message: BusMessage): Promise<boolean> {
    const claimed = await tx.query(`INSERT INTO inbox_events (event_id, handler) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING event_id`, [message.event_id, name]);
    if (claimed.length === 0) return false;
    await fn(message, tx);
    return true;
  }

  /** Parks a raw message in this service's dead-letter queue with the reason in its headers. */
  async deadLetterRaw(content: Buffer, properties: Record<string, unknown>, reason: string, error: string): Promise<void> {
    await this.deadLetter({ content: () => content, properties: properties as unknown as MessageProperties, routingKey: String(properties.type ?? '') }, reason, error);
  }

  private async deadLetter(delivery: Pick<Delivery, 'content' | 'properties' | 'routingKey'>, reason: string, error: string, extra: Record<string, unknown> = {}): Promise<void> {
    await this.publisher.sendToQueue(this.names.deadLetterQueue, delivery.content(), {
      ...delivery.properties,
      headers: {
        ...delivery.properties.headers,
        'x-touchpoint-reason': reason,
        'x-touchpoint-error': truncateText(error, 1000),
        'x-touchpoint-routing-key': delivery.routingKey,
        'x-touchpoint-dead-lettered-at': new Date().toISOString(),
        ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [`x-touchpoint-${k}`, v])),
      },
    });
    this.metrics.busDeadLettered.inc({ queue: this.names.deadLetterQueue, reason });
  }

  /** Stops consuming, waits (bounded) for handlers in flight, and closes the connection. */
  async close(): Promise<void> {
    this.stopping = true;
    if (this.consumer) await this.consumer.cancelAll().catch(() => undefined);
    const deadline = Date.now() + 5000;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await this.consumer?.close().catch(() => undefined);
    await this.publisher.close().catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }
}

/** A message's JSON, serialized once for both the pack's size and its body. */
interface Packed {
  message: BusMessage;
  json: string;
}

/**
 * Cuts messages into packs (see `PACK_CONTENT_TYPE`): each of one type, at most `size` messages and
 * `PACK_MAX_BYTES` of body (a message larger than that goes alone), in the order given within a
 * type; packs are ordered by their first message. Across types the order may change, which the
 * consumers allow already: they take one type per transaction and run several at once.
 */
export function packEvents(messages: BusMessage[], size: number): Packed[][] {
  const packs: Packed[][] = [];
  const open = new Map<string, { pack: Packed[]; bytes: number }>();
  for (const message of messages) {
    const json = JSON.stringify(message);
    const current = open.get(message.type);
    const bytes = Buffer.byteLength(json);
    if (current && current.pack.length < size && current.bytes + bytes + 1 <= PACK_MAX_BYTES) {
      current.pack.push({ message, json });
      current.bytes += bytes + 1;
      continue;
    }
    const pack = [{ message, json }];
    packs.push(pack);
    open.set(message.type, { pack, bytes: bytes + 2 });
  }
  return packs;
}

/**
 * The AMQP `message-id` of an event: its id, or a SHA-256 of it when the id is longer than the 255
 * characters AMQP allows (the body keeps the full id, which is what consumers and the inbox read).
 */
export function amqpMessageId(eventId: string): string {
  return eventId.length <= 255 ? eventId : `sha256:${createHash('sha256').update(eventId).digest('hex')}`;
}

/** Hides the password of a URL for logs and error lines. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}
