import amqplib from 'amqplib';
import type { BusMessage } from '@touchpoint/contracts';
import { BusNames } from './topology.js';

/** One parked message as the admin CLI shows it. */
export interface DeadLetter {
  event_id: string;
  type: string;
  organization_id: string | null;
  reason: string | null;
  error: string | null;
  dead_lettered_at: string | null;
  attempts: number | null;
}

/**
 * Lists and replays a service's dead-letter queue (DESIGN §2, admin CLI). Listing takes every
 * message without acking and closes the channel, which puts them all back in order. A service
 * whose dead-letter queue does not exist yet has none.
 */
export class DeadLetterAdmin {
  constructor(
    private readonly amqpUrl: string,
    private readonly namespace: string,
  ) {}

  async list(service: string, limit = 1000): Promise<DeadLetter[]> {
    return this.withChannel(async (channel, conn) => {
      const names = new BusNames(this.namespace, service);
      if (!(await this.queueExists(conn, names.deadLetterQueue))) return [];
      const out: DeadLetter[] = [];
      for (let i = 0; i < limit; i++) {
        const msg = await channel.get(names.deadLetterQueue, { noAck: false });
        if (!msg) break;
        out.push(describe(msg));
      }
      return out;
    });
  }

  /**
   * Moves parked messages back to the service's work queue with a fresh attempt count. `eventIds`
   * empty → all. Returns the ids replayed. Each message is acked from the DLQ only after the
   * broker confirmed its copy in the work queue.
   */
  async replay(service: string, eventIds: string[] = []): Promise<string[]> {
    const conn = await this.connect();
    try {
      const channel = await conn.createConfirmChannel();
      channel.on('error', () => undefined);
      const names = new BusNames(this.namespace, service);
      if (!(await this.queueExists(conn, names.deadLetterQueue))) return [];
      const replayed: string[] = [];
      const wanted = new Set(eventIds);
      for (;;) {
        const msg = await channel.get(names.deadLetterQueue, { noAck: false });
        if (!msg) break;
        const d = describe(msg);
        if (wanted.size > 0 && !wanted.has(d.event_id)) continue;
        const headers = Object.fromEntries(Object.entries(msg.properties.headers ?? {}).filter(([k]) => !k.startsWith('x-touchpoint-') && !k.startsWith('x-death')));
        channel.sendToQueue(names.queue, msg.content, { ...msg.properties, headers });
        await channel.waitForConfirms();
        channel.ack(msg);
        replayed.push(d.event_id);
      }
      await channel.close();
      return replayed;
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  /** A connection whose errors reject the current call instead of crashing the caller's process. */
  private async connect(): Promise<amqplib.ChannelModel> {
    const conn = await amqplib.connect(this.amqpUrl);
    conn.on('error', () => undefined);
    return conn;
  }

  /** Checks a queue on a throwaway channel (a missing queue closes the channel it was asked on). */
  private async queueExists(conn: amqplib.ChannelModel, queue: string): Promise<boolean> {
    const probe = await conn.createChannel();
    probe.on('error', () => undefined);
    try {
      await probe.checkQueue(queue);
      await probe.close();
      return true;
    } catch {
      return false;
    }
  }

  private async withChannel<T>(fn: (channel: amqplib.Channel, conn: amqplib.ChannelModel) => Promise<T>): Promise<T> {
    const conn = await this.connect();
    try {
      const channel = await conn.createChannel();
      channel.on('error', () => undefined);
      const result = await fn(channel, conn);
      await channel.close().catch(() => undefined);
      return result;
    } finally {
      await conn.close().catch(() => undefined);
    }
  }
}

function describe(msg: amqplib.GetMessage): DeadLetter {
  const h = msg.properties.headers ?? {};
  let body: Partial<BusMessage>;
  try {
    body = JSON.parse(msg.content.toString('utf8'));
  } catch {
    body = {};
  }
  return {
    event_id: String(body.event_id ?? msg.properties.messageId ?? ''),
    type: String(body.type ?? h['x-touchpoint-routing-key'] ?? ''),
    organization_id: body.organization_id ?? null,
    reason: (h['x-touchpoint-reason'] as string) ?? null,
    error: (h['x-touchpoint-error'] as string) ?? null,
    dead_lettered_at: (h['x-touchpoint-dead-lettered-at'] as string) ?? null,
    attempts: h['x-touchpoint-attempt'] !== undefined ? Number(h['x-touchpoint-attempt']) : null,
  };
}
