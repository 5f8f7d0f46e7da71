import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { ClientRMQ, MessagePattern, RmqRecordBuilder, ServerRMQ, type RmqOptions } from '@nestjs/microservices';
import type { Channel, Options } from 'amqplib';
import type { AmqpConnectionManager } from 'amqp-connection-manager';
import { firstValueFrom, timeout as rxTimeout, TimeoutError } from 'rxjs';
import { BusNames, reportChannelErrors } from '@touchpoint/bus';
import type { RpcAnswer, RpcPattern, RpcRequest, ServiceName } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from './tokens.js';
import type { ServiceConfig } from '@touchpoint/config';

type RmqMessage = { content: Buffer; properties: Record<string, unknown>; fields: Record<string, unknown> };

/**
 * NestJS's RabbitMQ server, plus one rule: a request whose pattern no handler serves (or that
 * cannot be parsed) is copied to the service's dead-letter queue before Nest answers it with an
 * error, so nothing vanishes silently (DESIGN §2).
 */
export class TouchpointRmqServer extends ServerRMQ {
  constructor(
    options: RmqOptions['options'],
    private readonly deadLetter: (content: Buffer, properties: Record<string, unknown>, reason: string) => Promise<void>,
  ) {
    super(options ?? {});
    // Nest's parse of a request body (a private method of ServerRMQ, so set on the instance):
    // served from `handleMessage`'s parse when it made one.
    const self = this as unknown as { parseMessageContent: (content: Buffer) => unknown };
    const nestParse = self.parseMessageContent.bind(this);
    self.parseMessageContent = (content: Buffer) => {
      if (!this.parsed.has(content)) return nestParse(content);
      const raw = this.parsed.get(content);
      this.parsed.delete(content);
      return raw;
    };
  }

  /**
   * The server's connection, its channel's errors reported instead of thrown (see
   * `reportChannelErrors`), and its lost answers logged (see `reportLostAnswers`).
   */
  override async createClient<T = AmqpConnectionManager>(): Promise<T> {
    const manager = await super.createClient<AmqpConnectionManager>();
    reportChannelErrors(manager, (err) => this.logger.warn(`rpc server channel failed (reopened on the next connect): ${err.message}`));
    return reportLostAnswers(manager, (err) => this.logger.warn(`rpc answer lost (the caller's deadline answers it): ${err.message}`)) as T;
  }

  /**
   * Nest's set-up, with its `consume` awaited. Nest starts the consumer without awaiting it, so
   * when the broker link drops before the broker confirmed the consumer, amqplib rejects that
   * promise with nobody listening and Node kills the process (found by the chaos harness:
   * outreach and messaging died on a broker cut). Awaited here, the rejection fails the channel's
   * set-up instead, which the connection manager reports (`reportChannelErrors`) and runs again
   * on the next connect.
   */
  override async setupChannel(channel: Channel, callback: () => void): Promise<void> {
    const consumers: Promise<unknown>[] = [];
    const watched = new Proxy(channel, {
      get(target, property) {
        if (property === 'consume') {
          return (...args: Parameters<Channel['consume']>) => {
            const started = target.consume(...args);
            consumers.push(started);
            return started;
          };
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    await super.setupChannel(watched, callback);
    await Promise.all(consumers);
  }

  /**
   * The body of each request as `handleMessage` read it, for Nest's `parseMessageContent` to take
   * instead of parsing it a second time (the content Buffer is the key: gone with the message).
   */
  private readonly parsed = new WeakMap<Buffer, unknown>();

  override async handleMessage(incoming: Record<string, unknown>, channel: unknown): Promise<void> {
    const message = incoming as RmqMessage | null;
    if (message && message.properties.contentType === RPC_PACK_CONTENT_TYPE) return this.handlePack(message, channel);
    if (message) {
      let pattern: string | undefined;
      try {
        // A pack's request comes with its packet parsed already (`handlePack`).
        const raw = (this.parsed.has(message.content) ? this.parsed.get(message.content) : JSON.parse(message.content.toString('utf8'))) as { pattern?: unknown };
        this.parsed.set(message.content, raw);
        pattern = typeof raw.pattern === 'string' ? raw.pattern : JSON.stringify(raw.pattern);
      } catch {
        pattern = undefined;
      }
      if (pattern === undefined || !this.getHandlerByPattern(pattern)) {
        await this.deadLetter(message.content, message.properties, pattern === undefined ? 'unreadable' : ErrorCode.NoHandler).catch(() => undefined);
        if (pattern === undefined) return;
      }
    }
    return super.handleMessage(incoming, channel);
  }

  /**
   * A pack of requests (`packRequests`): each runs as if it had come alone, at the same time as the
   * others, and is answered on its own (its packet's `id` is its correlation id). A pack that cannot
   * be read is dead-lettered whole; its callers' deadlines answer them.
   */
  private async handlePack(message: RmqMessage, channel: unknown): Promise<void> {
    let packets: unknown[];
    try {
      const parsed = JSON.parse(message.content.toString('utf8')) as unknown;
      if (!Array.isArray(parsed)) throw new Error('not an array');
      packets = parsed;
    } catch {
      await this.deadLetter(message.content, message.properties, 'unreadable').catch(() => undefined);
      return;
    }
    const { contentType: _pack, ...properties } = message.properties;
    await Promise.all(
      packets.map((packet) => {
        const id = (packet as { id?: unknown } | null)?.id;
        // Its own body, for a dead-letter copy of it alone; parsed once, with the pack.
        const content = Buffer.from(JSON.stringify(packet));
        this.parsed.set(content, packet);
        return this.handleMessage({ content, properties: { ...properties, correlationId: typeof id === 'string' ? id : undefined }, fields: message.fields }, channel).catch((err: Error) => this.logger.warn(`rpc request of a pack failed: ${err.message}`));
      }),
    );
  }

  /**
   * The handler of `pattern`. Our patterns are dotted names registered as themselves, so one map
   * lookup finds them; Nest's own lookup first tries `JSON.parse` on every pattern, and the
   * SyntaxError it throws and catches for each request was 4 % of the dispatcher's CPU
   * (`bench:pipeline` profile). Anything else (a pattern sent as JSON) takes Nest's way.
   */
  override getHandlerByPattern(pattern: string): ReturnType<ServerRMQ['getHandlerByPattern']> {
    return this.messageHandlers.get(pattern) ?? super.getHandlerByPattern(pattern);
  }
}

/**
 * Makes every channel `manager` creates from now on hand the failure of a `sendToQueue` to
 * `onLost` when nobody else listens for it. Nest's RPC server sends each answer with
 * `sendToQueue` and drops the promise; when the broker link closes before the broker confirmed an
 * answer, the promise rejects ('channel closed') unheard and Node kills the process (found by the
 * chaos harness: the dispatcher died on a broker cut). A lost answer needs nothing more:
 * the caller's RPC deadline answers 503 (DESIGN §2). The promise is still returned to the caller.
 */
export function reportLostAnswers<T extends AmqpConnectionManager>(manager: T, onLost: (err: Error) => void): T {
  const create = manager.createChannel.bind(manager);
  manager.createChannel = ((options?: Parameters<AmqpConnectionManager['createChannel']>[0]) => {
    const channel = create(options);
    const send = channel.sendToQueue.bind(channel);
    channel.sendToQueue = ((...args: Parameters<typeof channel.sendToQueue>) => {
      const sent = send(...args);
      sent.catch((err: Error) => onLost(err));
      return sent;
    }) as typeof channel.sendToQueue;
    return channel;
  }) as AmqpConnectionManager['createChannel'];
  return manager;
}

/** Content type of a pack of RPC requests: a JSON array of Nest request packets (`{pattern, data, id}`). */
export const RPC_PACK_CONTENT_TYPE = 'application/vnd.touchpoint.rpc-pack+json';

/** A request waiting for the send of its lane that is under way. */
interface PendingRequest {
  content: Buffer;
  options: Options.Publish;
  /** When the caller handed it over (its deadline runs from then), ms since the epoch. */
  at: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A request larger than this goes alone, bytes (ours). */
const PACK_REQUEST_MAX_BYTES = 64 * 1024;
/** A pack stops growing at this size, bytes (ours): far below RabbitMQ's message size limit. */
const PACK_MAX_BYTES = 512 * 1024;
const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/**
 * Makes every channel `manager` creates pack the requests it sends: the requests of one queue, reply
 * queue and deadline (`expiration`) that are handed over while the broker has not yet confirmed the
 * last send of that lane go together, in the next sends, as broker messages of up to `packSize`
 * requests (`RPC_PACK_CONTENT_TYPE`, at most PACK_MAX_BYTES). A lone request goes at once, as it
 * always did; so does a request with headers of its own or larger than PACK_REQUEST_MAX_BYTES. The
 * server (`TouchpointRmqServer`) runs each request of a pack as if it had come alone and answers
 * each on its own. A pack expires with what is left of its oldest request's deadline; a request
 * whose deadline passed while it waited is not sent (its caller gets the error at once).
 */
export function packRequests<T extends AmqpConnectionManager>(manager: T, packSize: number): T {
  if (packSize <= 1) return manager;
  const create = manager.createChannel.bind(manager);
  manager.createChannel = ((options?: Parameters<AmqpConnectionManager['createChannel']>[0]) => {
    const channel = create(options);
    const send = channel.sendToQueue.bind(channel);
    const lanes = new Map<string, { busy: boolean; waiting: PendingRequest[] }>();
    const sendGroup = async (queue: string, group: PendingRequest[]) => {
      const ttl = group[0]!.options.expiration === undefined ? undefined : Number(group[0]!.options.expiration) - (Date.now() - group[0]!.at);
      if (ttl !== undefined && ttl <= 0) {
        const err = new Error('rpc request expired while it waited to be sent');
        for (const r of group) r.reject(err);
        return;
      }
      const expiration = ttl === undefined ? {} : { expiration: String(Math.ceil(ttl)) };
      // A pack's requests share their reply queue and deadline (the lane); each carries its correlation id as its packet's `id`.
      const [content, packOptions] =
        group.length === 1
          ? [group[0]!.content, { ...group[0]!.options, ...expiration }]
          : [Buffer.concat([OPEN, ...group.flatMap((r, i) => (i === 0 ? [r.content] : [COMMA, r.content])), CLOSE]), { ...group[0]!.options, ...expiration, correlationId: undefined, contentType: RPC_PACK_CONTENT_TYPE }];
      try {
        await send(queue, content, packOptions);
        for (const r of group) r.resolve();
      } catch (err) {
        for (const r of group) r.reject(err);
      }
    };
    const run = async (key: string, queue: string, lane: { busy: boolean; waiting: PendingRequest[] }) => {
      while (lane.waiting.length > 0) {
        // Everything waiting goes now, in packs sent together (not one confirm after another).
        const groups: PendingRequest[][] = [];
        let bytes = 0;
        for (const r of lane.waiting.splice(0)) {
          const last = groups.at(-1);
          if (!last || last.length >= packSize || bytes + r.content.length > PACK_MAX_BYTES) {
            groups.push([r]);
            bytes = r.content.length;
          } else {
            last.push(r);
            bytes += r.content.length;
          }
        }
        await Promise.all(groups.map((group) => sendGroup(queue, group)));
      }
      lane.busy = false;
      lanes.delete(key);
    };
    channel.sendToQueue = ((queue: string, content: Buffer, options?: Options.Publish, ...rest: unknown[]) => {
      if (rest.length > 0 || !options?.replyTo || (options.headers && Object.keys(options.headers).length > 0) || content.length > PACK_REQUEST_MAX_BYTES) {
        return (send as (...args: unknown[]) => Promise<boolean>)(queue, content, options, ...rest);
      }
      const key = `${queue}\n${options.replyTo}\n${String(options.expiration ?? '')}`;
      let lane = lanes.get(key);
      if (!lane) {
        lane = { busy: false, waiting: [] };
        lanes.set(key, lane);
      }
      if (!lane.busy) {
        // Idle: this request goes now, alone (its own options, correlation id included).
        lane.busy = true;
        const sent = send(queue, content, options);
        const next = () => run(key, queue, lane);
        void sent.then(next, next);
        return sent;
      }
      return new Promise<boolean>((resolve, reject) => lane.waiting.push({ content, options, at: Date.now(), resolve: () => resolve(true), reject }));
    }) as typeof channel.sendToQueue;
    return channel;
  }) as AmqpConnectionManager['createChannel'];
  return manager;
}

/**
 * NestJS's RabbitMQ client, its channel's errors reported instead of thrown (see
 * `reportChannelErrors`), and its requests packed under load (`packRequests`; 1 sends each alone).
 */
export class TouchpointRmqClient extends ClientRMQ {
  constructor(
    options: RmqOptions['options'],
    private readonly packSize = 1,
  ) {
    super(options ?? {});
  }

  override createClient(): ReturnType<ClientRMQ['createClient']> {
    return packRequests(
      reportChannelErrors(super.createClient(), (err) => this.logger.warn(`rpc client channel failed (reopened on the next connect): ${err.message}`)),
      this.packSize,
    );
  }
}

/** A handler of RPC pattern `P`: takes the pattern's request (or anything wider) and answers its answer (`RpcContract`). */
export type RpcHandlerOf<P extends RpcPattern> = (request: RpcRequest<P>, ...rest: never[]) => RpcAnswer<P> | Promise<RpcAnswer<P>>;

/**
 * Nest's `@OnRpc(pattern)`, checked against `RpcContract`: a method whose payload does not
 * take the pattern's request, or whose answer is not the pattern's answer, does not compile.
 */
export function OnRpc<P extends RpcPattern>(pattern: P): (target: object, key: string | symbol, descriptor: { value?: RpcHandlerOf<P> }) => void {
  return MessagePattern(pattern);
}

/**
 * Socket options of both ends of an RPC: TCP_NODELAY. amqplib leaves Nagle's algorithm on, so a
 * request or reply written while an earlier one is still unacknowledged waits for the broker's
 * (delayed) ACK, tens of ms on Linux: every call in flight behind another paid it.
 */
const RPC_CONNECTION_OPTIONS = { noDelay: true };

/** RMQ options of a service's RPC server queue. */
export function rpcServerOptions(config: ServiceConfig, service: string): NonNullable<RmqOptions['options']> {
  return {
    urls: [config.AMQP_URL],
    queue: BusNames.rpcQueueOf(config.BUS_NAMESPACE, service),
    queueOptions: { durable: true },
    prefetchCount: 50,
    noAck: true,
    socketOptions: { connectionOptions: RPC_CONNECTION_OPTIONS },
  };
}

/**
 * Request/reply to another service over RabbitMQ with a deadline (DESIGN §2). A timeout or an
 * unreachable broker becomes `AppError(service_unavailable)`; a service's AppError comes back as
 * the same AppError.
 */
@Injectable()
export class RpcClient implements OnApplicationShutdown {
  private readonly clients = new Map<string, ClientRMQ>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: ServiceConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Calls `pattern` on `service` with its request (`RpcContract`) and resolves with its answer.
   * @param timeoutMs deadline in ms (default RPC_TIMEOUT_MS)
   * @throws AppError service_unavailable on timeout; the service's own AppError otherwise
   */
  call<P extends RpcPattern>(service: ServiceName, pattern: P, data: RpcRequest<P>, timeoutMs?: number): Promise<RpcAnswer<P>> {
    return this.callUnchecked(service, pattern, data, timeoutMs) as Promise<RpcAnswer<P>>;
  }

  /**
   * `call` without the contract: for tests and tools that send what no contract allows (a hostile
   * payload, a test-only pattern). Services use `call`.
   * @param timeoutMs deadline in ms (default RPC_TIMEOUT_MS)
   * @throws AppError service_unavailable on timeout; the service's own AppError otherwise
   */
  async callUnchecked<T = unknown>(service: ServiceName, pattern: string, data: unknown, timeoutMs = this.config.RPC_TIMEOUT_MS): Promise<T> {
    const client = this.clientFor(service);
    try {
      // The request expires with its deadline: a service that starts later must not act on a call
      // whose caller has already given up.
      const record = new RmqRecordBuilder(data ?? {}).setOptions({ expiration: String(timeoutMs) }).build();
      return await firstValueFrom(client.send<T>(pattern, record).pipe(rxTimeout(timeoutMs)));
    } catch (err) {
      if (err instanceof TimeoutError) {
        throw new AppError(ErrorCode.ServiceUnavailable, `${service} did not answer within ${timeoutMs} ms`, { service });
      }
      const appError = AppError.fromEnvelope(err);
      if (appError) throw appError;
      if (typeof err === 'string' && err.includes('no matching message handler')) {
        throw new AppError(ErrorCode.NoHandler, `${service} has no handler for ${pattern}`, { service, pattern });
      }
      this.logger.warn({ event: 'rpc.call_failed', service, pattern, err: describeError(err) }, 'rpc call failed');
      throw new AppError(ErrorCode.ServiceUnavailable, `${service} is unavailable`, { service });
    }
  }

  private clientFor(service: string): ClientRMQ {
    let client = this.clients.get(service);
    if (!client) {
      client = new TouchpointRmqClient(
        {
          urls: [this.config.AMQP_URL],
          queue: BusNames.rpcQueueOf(this.config.BUS_NAMESPACE, service),
          queueOptions: { durable: true },
          socketOptions: { reconnectTimeInSeconds: 1, heartbeatIntervalInSeconds: 5, connectionOptions: RPC_CONNECTION_OPTIONS },
        },
        this.config.RPC_PACK_SIZE,
      );
      // Connection errors surface per call; without a listener they would be unhandled.
      client.connect().catch(() => undefined);
      this.clients.set(service, client);
    }
    return client;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.close().catch(() => undefined)));
  }
}

function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}
