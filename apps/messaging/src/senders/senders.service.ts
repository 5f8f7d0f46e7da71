import { Inject, Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, OutboxEvents, OutboxRpc, type OutboxSenderEventData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { StreamRepository } from '../stream/stream.repository.js';
import { SendersRepository } from './senders.repository.js';

/** How long an organization lookup is remembered in memory, ms (a number rarely changes hands). */
const CACHE_TTL_MS = 60_000;

/**
 * Which organization a WhatsApp business number (`phone_number_id`) belongs to: the read model of
 * `outbox.sender.*`, then the dispatcher's lookup RPC for a number the events have not brought yet.
 */
@Injectable()
export class SendersService {
  private readonly cache = new Map<string, { value: { organization_id: string; sender_id: string } | null; until: number }>();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: SendersRepository,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    private readonly stream: StreamRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @OnBusMessage(OutboxEvents.SenderConnected)
  onConnected(message: BusMessage<OutboxSenderEventData>, tx: Tx) {
    return this.apply(message, tx);
  }
  /**
   * A disconnected number. When the dispatcher did it by itself (`reason`: Graph refused the
   * token), the organization learns it on the real-time feed, since nothing of theirs can be sent
   * from that number until someone gives it a new token.
   */
  @OnBusMessage(OutboxEvents.SenderDisconnected)
  async onDisconnected(message: BusMessage<OutboxSenderEventData>, tx: Tx) {
    await this.apply(message, tx);
    const d = message.data;
    if (d?.reason && message.organization_id) {
      await this.stream.append(tx, message.organization_id, OutboxEvents.SenderDisconnected, {
        sender_id: d.sender_id,
        channel: d.channel,
        phone_number_id: d.phone_number_id ?? null,
        display_phone_number: d.display_phone_number ?? null,
        status: d.status,
        reason: d.reason,
        error_code: d.error_code ?? null,
        error_subcode: d.error_subcode ?? null,
      });
    }
  }
  @OnBusMessage(OutboxEvents.SenderUpdated)
  onUpdated(message: BusMessage<OutboxSenderEventData>, tx: Tx) {
    return this.apply(message, tx);
  }
  @OnBusMessage(OutboxEvents.SenderRemoved)
  onRemoved(message: BusMessage<OutboxSenderEventData>, tx: Tx) {
    return this.apply(message, tx);
  }

  private async apply(message: BusMessage<OutboxSenderEventData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (d?.channel !== 'whatsapp' || !d.phone_number_id || !message.organization_id) return;
    await this.repository.upsert(tx, { phone_number_id: d.phone_number_id, organization_id: message.organization_id, sender_id: d.sender_id, display_phone_number: d.display_phone_number ?? null, status: d.status }, this.clock.now());
    this.cache.delete(d.phone_number_id);
  }

  /** The owner of a business number, or null when nobody has registered it. */
  async resolve(phoneNumberId: string): Promise<{ organization_id: string; sender_id: string } | null> {
    const cached = this.cache.get(phoneNumberId);
    if (cached && cached.until > Date.now()) return cached.value;
    const row = await this.uow.run((tx) => this.repository.find(tx, phoneNumberId));
    let value: { organization_id: string; sender_id: string } | null = row && row.status !== 'removed' ? { organization_id: row.organization_id, sender_id: row.sender_id } : null;
    if (!value) {
      try {
        const found = await this.rpc.call('outbox-dispatcher', OutboxRpc.SenderLookupByPhoneNumberId, { phone_number_id: phoneNumberId });
        // The dispatcher answers nulls for a number nobody owns.
        value = found.organization_id && found.sender_id ? { organization_id: found.organization_id, sender_id: found.sender_id } : null;
      } catch (err) {
        this.logger.warn({ event: 'messaging.sender_lookup_failed', phone_number_id: phoneNumberId, err: (err as Error).message }, 'sender lookup failed');
        throw err;
      }
    }
    this.cache.set(phoneNumberId, { value, until: Date.now() + CACHE_TTL_MS });
    return value;
  }
}
