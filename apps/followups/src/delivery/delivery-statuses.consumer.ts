import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, MessagingEvents, type MessageOutcomeData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { type DeliveryReport, SendReportsService } from '../effects/send-reports.service.js';

/** A report about a message followups asked for, with the key of its send (the handlers' `when`, and their type guard). */
const ourSend = (message: BusMessage<MessageOutcomeData>): message is BusMessage<MessageOutcomeData> & { organization_id: string } => message.data.requester === 'followups' && !!message.organization_id && !!message.data.idempotency_key;

/**
 * Bus edge of delivery reports: messaging's `delivered` and `read` for messages followups asked
 * for, kept on the send effect and the enrollment's `last_send_status` (`SendReportsService`), with
 * the consumer batch's other send reports right before its commit.
 */
@Injectable()
export class DeliveryStatusesConsumer {
  constructor(private readonly reports: SendReportsService) {}

  private apply(message: BusMessage<MessageOutcomeData>, tx: Tx, report: DeliveryReport): void {
    if (!ourSend(message)) return;
    const d = message.data;
    // The provider's own time when messaging passes it on; else when messaging published it.
    const at = new Date(d.status_at && !Number.isNaN(Date.parse(d.status_at)) ? d.status_at : message.occurred_at);
    this.reports.applyLater(tx, { kind: 'delivery', organizationId: message.organization_id, key: d.idempotency_key, report, messageId: d.message_id, at });
  }

  @OnBusMessage(MessagingEvents.MessageDelivered, { when: ourSend })
  async onDelivered(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    this.apply(message, tx, 'delivered');
  }

  @OnBusMessage(MessagingEvents.MessageRead, { when: ourSend })
  async onRead(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    this.apply(message, tx, 'read');
  }
}
