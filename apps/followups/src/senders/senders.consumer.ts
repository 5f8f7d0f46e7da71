import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, OutboxEvents, type OutboxSenderEventData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { Clock } from '@touchpoint/time';
import { StopPathsService } from '../stop-paths/stop-paths.service.js';
import { SenderChoiceCache } from './sender-choice.cache.js';
import { SendersRepository } from './senders.repository.js';

/** Keeps the senders read model from the dispatcher's `outbox.sender.*` events (sender choice). */
@Injectable()
export class SendersConsumer {
  constructor(
    private readonly senders: SendersRepository,
    private readonly choice: SenderChoiceCache,
    private readonly stopPaths: StopPathsService,
    private readonly clock: Clock,
  ) {}

  private async apply(message: BusMessage<OutboxSenderEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.senders.apply(tx, message.organization_id, message.data, new Date(message.occurred_at));
    this.choice.invalidate(message.organization_id);
    // A number came back: enrollments parked for want of one try again now.
    if (message.data.status === 'connected') await this.stopPaths.resumeParkedBySender(tx, message.organization_id, this.clock.now());
  }

  @OnBusMessage(OutboxEvents.SenderConnected)
  onConnected(message: BusMessage<OutboxSenderEventData>, tx: Tx): Promise<void> {
    return this.apply(message, tx);
  }

  @OnBusMessage(OutboxEvents.SenderDisconnected)
  onDisconnected(message: BusMessage<OutboxSenderEventData>, tx: Tx): Promise<void> {
    return this.apply(message, tx);
  }

  @OnBusMessage(OutboxEvents.SenderRemoved)
  onRemoved(message: BusMessage<OutboxSenderEventData>, tx: Tx): Promise<void> {
    return this.apply({ ...message, data: { ...message.data, status: 'removed' } }, tx);
  }

  @OnBusMessage(OutboxEvents.SenderUpdated)
  onUpdated(message: BusMessage<OutboxSenderEventData>, tx: Tx): Promise<void> {
    return this.apply(message, tx);
  }
}
