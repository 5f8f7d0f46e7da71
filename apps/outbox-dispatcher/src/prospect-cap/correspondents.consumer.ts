import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type ContactEventData, type MessageReceivedData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { Clock } from '@touchpoint/time';
import { ProspectCapRepository } from './prospect-cap.repository.js';

/** An organization's inbound email with a sender address: the only messages that make a correspondent. */
const fromAnEmailAddress = (message: BusMessage<MessageReceivedData>): message is BusMessage<MessageReceivedData> & { organization_id: string } => {
  const d = message.data;
  return !!message.organization_id && d?.channel === 'email' && typeof d.from === 'string' && d.from.includes('@');
};

/** An organization's contact with an email address: the only contacts this read model keeps. */
const withAnEmailAddress = (message: BusMessage<ContactEventData>): message is BusMessage<ContactEventData & { email: string }> & { organization_id: string } => {
  const d = message.data;
  return !!message.organization_id && typeof d?.email === 'string' && d.email.includes('@');
};

/**
 * Keeps `email_correspondents`, the dispatcher's read model of who is not a prospect (seed 003 §6),
 * from messaging's events: an inbound email marks its sender as having written to the organization;
 * a CRM contact (messaging's approved person) marks its address as a CRM person.
 */
@Injectable()
export class CorrespondentsConsumer {
  constructor(
    private readonly clock: Clock,
    private readonly repository: ProspectCapRepository,
  ) {}

  @OnBusMessage(MessagingEvents.MessageReceived, { when: fromAnEmailAddress })
  async onReceived(message: BusMessage<MessageReceivedData>, tx: Tx): Promise<void> {
    if (!fromAnEmailAddress(message)) return;
    await this.repository.markWroteIn(tx, message.organization_id, message.data.from.trim().toLowerCase(), this.clock.now());
  }

  @OnBusMessage(MessagingEvents.ContactCreated, { when: withAnEmailAddress })
  onCreated(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    return this.contact(message, tx);
  }

  @OnBusMessage(MessagingEvents.ContactUpdated, { when: withAnEmailAddress })
  onUpdated(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    return this.contact(message, tx);
  }

  private async contact(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    if (!withAnEmailAddress(message)) return;
    const d = message.data;
    const crm = d.kind === 'crm';
    await this.repository.markContact(tx, message.organization_id, d.email.trim().toLowerCase(), crm, this.clock.now());
  }
}
