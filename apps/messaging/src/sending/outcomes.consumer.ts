import { Injectable } from '@nestjs/common';
import { BeforeBusBatch, OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type MessagingChannel, type OutboxEntryEventData, OutboxEvents, type OutboxProviderStatusEventData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { OutcomesService } from './outcomes.service.js';

/**
 * An outcome of anything but a read receipt. A read receipt (seed 004 "Read receipts", one per
 * inbound WhatsApp message) has no message row of its own: its log context names the INBOUND
 * message, which no outcome moves, so its outcome would cost a transaction, an inbox row and a
 * lock on that inbound row for nothing (one per inbound message).
 */
export const notAReadReceipt = (message: BusMessage<OutboxEntryEventData>): boolean => message.data?.payload_type !== 'read_receipt';

/** Bus edge of the dispatcher's outcome events and provider statuses (DESIGN §4). */
@Injectable()
export class OutcomesConsumer {
  constructor(private readonly outcomes: OutcomesService) {}

  /** A batch of entry outcomes locks its messages up front, in one order (`OutcomesService.lockOutcomeBatch`). */
  @BeforeBusBatch(OutboxEvents.EntryAccepted, OutboxEvents.EntryFailed, OutboxEvents.EntryCancelled, OutboxEvents.EntryAmbiguous, OutboxEvents.EntryResolved)
  lockBatch(messages: BusMessage<OutboxEntryEventData>[], tx: Tx): Promise<void> {
    return this.outcomes.lockOutcomeBatch(
      tx,
      messages.flatMap((m) => (m.organization_id ? [{ organizationId: m.organization_id, type: m.type, data: m.data }] : [])),
    );
  }

  @OnBusMessage(OutboxEvents.EntryAccepted, { when: notAReadReceipt })
  onAccepted(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    return this.outcomes.accepted(tx, orgOf(message), message.data);
  }

  @OnBusMessage(OutboxEvents.EntryFailed, { when: notAReadReceipt })
  onFailed(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    return this.outcomes.failed(tx, orgOf(message), message.data);
  }

  @OnBusMessage(OutboxEvents.EntryCancelled, { when: notAReadReceipt })
  onCancelled(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    return this.outcomes.cancelled(tx, orgOf(message), message.data);
  }

  @OnBusMessage(OutboxEvents.EntryAmbiguous, { when: notAReadReceipt })
  onAmbiguous(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    return this.outcomes.ambiguous(tx, orgOf(message), message.data);
  }

  @OnBusMessage(OutboxEvents.EntryResolved, { when: notAReadReceipt })
  onResolved(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    return message.data.resolution === 'rejected' ? this.outcomes.failed(tx, orgOf(message), message.data) : this.outcomes.accepted(tx, orgOf(message), message.data);
  }

  /** Applied with the transaction's other statuses right before it commits (`OutcomesService.statusLater`). */
  @OnBusMessage(OutboxEvents.ProviderStatusRecorded)
  async onProviderStatus(message: BusMessage<OutboxProviderStatusEventData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (!d?.provider_message_id || !d.status) throw new AppError(ErrorCode.InvalidMessage, 'provider status without id or status');
    const hint = d.log_context?.message_id;
    this.outcomes.statusLater(
      tx,
      {
        organization_id: orgOf(message),
        channel: d.channel as MessagingChannel,
        external_id: d.provider_message_id,
        status: d.status,
        at: d.provider_timestamp ? new Date(d.provider_timestamp) : new Date(message.occurred_at),
        error_code: d.error_code ?? null,
        error_message: d.error_message ?? null,
        error_details: d.error_details ?? null,
      },
      typeof hint === 'string' ? hint : null,
    );
  }
}

function orgOf(message: BusMessage<unknown>): string {
  if (!message.organization_id) throw new AppError(ErrorCode.InvalidMessage, `${message.type} without organization_id`);
  return message.organization_id;
}
