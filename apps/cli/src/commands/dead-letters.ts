import { Inject, Injectable } from '@nestjs/common';
import amqplib from 'amqplib';
import { BusNames, type DeadLetter, DeadLetterAdmin } from '@touchpoint/bus';
import type { ServiceName } from '@touchpoint/contracts';
import type { CliConfig } from '../cli.config.js';
import { CLI_CONFIG } from '../cli.tokens.js';

/** AMQP reply code of a queue that does not exist. */
const AMQP_NOT_FOUND = 404;

/**
 * A service's dead-letter queue (DESIGN §2) in the configured namespace. A service that has never
 * started has no queue yet: that is an empty queue, not an error.
 */
@Injectable()
export class DeadLetters {
  private readonly admin: DeadLetterAdmin;

  constructor(@Inject(CLI_CONFIG) private readonly config: CliConfig) {
    this.admin = new DeadLetterAdmin(config.AMQP_URL, config.BUS_NAMESPACE);
  }

  /** Up to `limit` parked messages, oldest first; the queue is left as it was. */
  async list(service: ServiceName, limit: number): Promise<DeadLetter[]> {
    return (await this.queueExists(service)) ? this.admin.list(service, limit) : [];
  }

  /** Moves parked messages (all, or those of `eventIds`) back to the service's queue; returns their ids. */
  async replay(service: ServiceName, eventIds: string[]): Promise<string[]> {
    return (await this.queueExists(service)) ? this.admin.replay(service, eventIds) : [];
  }

  /**
   * Whether the service's dead-letter queue exists. Asked on a connection of its own: the broker
   * answers a missing queue by closing the channel, which must not take the admin's down.
   */
  private async queueExists(service: ServiceName): Promise<boolean> {
    const connection = await amqplib.connect(this.config.AMQP_URL);
    connection.on('error', () => undefined);
    try {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      await channel.checkQueue(new BusNames(this.config.BUS_NAMESPACE, service).deadLetterQueue);
      await channel.close().catch(() => undefined);
      return true;
    } catch (err) {
      if ((err as { code?: unknown }).code === AMQP_NOT_FOUND) return false;
      throw err;
    } finally {
      await connection.close().catch(() => undefined);
    }
  }
}
