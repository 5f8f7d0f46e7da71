import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, MessagingEvents, type MessageOutcomeData, OutboxEvents, type OutboxEntryEventData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { SendOutcomesService } from './send-outcomes.service.js';

const REQUESTER = 'followups';

/** Keys of our sends at the dispatcher: enrollment steps and one-off returns. */
const isOurs = (key: string | null | undefined): boolean => !!key && (key.startsWith('followup:') || key.startsWith('promise:'));

/** Messaging's outcome of a message followups asked for (the `when` of messaging's events, and the handlers' type guard). */
const ourMessage = (message: BusMessage<MessageOutcomeData>): message is BusMessage<MessageOutcomeData> & { organization_id: string } => message.data.requester === REQUESTER && !!message.organization_id;

/** The dispatcher's event about an entry of ours (the `when` of its events, and the handlers' type guard). */
const ourEntry = (message: BusMessage<OutboxEntryEventData>): message is BusMessage<OutboxEntryEventData> & { organization_id: string } => !!message.organization_id && isOurs(message.data.idempotency_key);

/**
 * Bus edge of send outcomes: messaging's message events and the dispatcher's uncertainty events,
 * applied with the consumer batch's other send reports right before its commit (`applyLater`).
 */
@Injectable()
export class SendOutcomesConsumer {
  constructor(private readonly outcomes: SendOutcomesService) {}

  private async fromMessaging(message: BusMessage<MessageOutcomeData>, tx: Tx, outcome: 'sent' | 'failed' | 'cancelled'): Promise<void> {
    if (!ourMessage(message)) return;
    const d = message.data;
    await this.outcomes.applyLater(tx, message.organization_id, d.idempotency_key, outcome, { messageId: d.message_id, errorCode: d.error_code ?? null, at: new Date(message.occurred_at) });
  }

  @OnBusMessage(MessagingEvents.MessageSent, { when: ourMessage })
  onSent(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    return this.fromMessaging(message, tx, 'sent');
  }

  @OnBusMessage(MessagingEvents.MessageFailed, { when: ourMessage })
  onFailed(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    return this.fromMessaging(message, tx, 'failed');
  }

  @OnBusMessage(MessagingEvents.MessageCancelled, { when: ourMessage })
  onCancelled(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    return this.fromMessaging(message, tx, 'cancelled');
  }

  /** The dispatcher does not know whether the send went out: the effect is uncertain until resolved. */
  @OnBusMessage(OutboxEvents.EntryAmbiguous, { when: ourEntry })
  async onAmbiguous(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    if (!ourEntry(message)) return;
    await this.outcomes.applyLater(tx, message.organization_id, message.data.idempotency_key, 'uncertain', { at: new Date(message.occurred_at) });
  }

  @OnBusMessage(OutboxEvents.EntryResolved, { when: ourEntry })
  async onResolved(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    if (!ourEntry(message)) return;
    const outcome = message.data.resolution === 'accepted' ? 'sent' : 'failed';
    await this.outcomes.applyLater(tx, message.organization_id, message.data.idempotency_key, outcome, { errorCode: message.data.error_code ?? null, at: new Date(message.occurred_at) });
  }

  /** The dispatcher's own word on the wire outcome (messaging relays it as well; the first to arrive wins). */
  @OnBusMessage(OutboxEvents.EntryAccepted, { when: ourEntry })
  async onAccepted(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    if (!ourEntry(message)) return;
    await this.outcomes.applyLater(tx, message.organization_id, message.data.idempotency_key, 'sent', { at: new Date(message.occurred_at) });
  }

  @OnBusMessage(OutboxEvents.EntryFailed, { when: ourEntry })
  async onEntryFailed(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    if (!ourEntry(message)) return;
    await this.outcomes.applyLater(tx, message.organization_id, message.data.idempotency_key, 'failed', { errorCode: message.data.error_code ?? null, at: new Date(message.occurred_at) });
  }

  /** A cancel the dispatcher honoured (messaging relays it too; whichever comes first wins). */
  @OnBusMessage(OutboxEvents.EntryCancelled, { when: ourEntry })
  async onEntryCancelled(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    if (!ourEntry(message)) return;
    await this.outcomes.applyLater(tx, message.organization_id, message.data.idempotency_key, 'cancelled', { at: new Date(message.occurred_at) });
  }
}
