import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, MessagingEvents, type MessageOutcomeData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { type DeliveryReport, DeliveryStatusesService } from './delivery-statuses.service.js';

/** Bus edge of delivery reports: messaging's `delivered` and `read` for messages followups asked for. */
@Injectable()
export class DeliveryStatusesConsumer {
  constructor(private readonly statuses: DeliveryStatusesService) {}

  private async apply(message: BusMessage<MessageOutcomeData>, tx: Tx, report: DeliveryReport): Promise<void> {
    const d = message.data;
    if (d.requester !== 'followups' || !message.organization_id || !d.idempotency_key) return;
    // The provider's own time when messaging passes it on; else when messaging published it.
    const at = new Date(d.status_at && !Number.isNaN(Date.parse(d.status_at)) ? d.status_at : message.occurred_at);
    await this.statuses.apply(tx, message.organization_id, d.idempotency_key, report, { messageId: d.message_id, at });
  }

  @OnBusMessage(MessagingEvents.MessageDelivered)
  onDelivered(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    return this.apply(message, tx, 'delivered');
  }

  @OnBusMessage(MessagingEvents.MessageRead)
  onRead(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    return this.apply(message, tx, 'read');
  }
}
