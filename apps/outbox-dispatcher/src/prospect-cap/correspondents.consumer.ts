import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type ContactEventData, type MessageReceivedData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { Clock } from '@touchpoint/time';

/**
 * Keeps `email_correspondents`, the dispatcher's read model of who is not a prospect (seed 003 §6),
 * from messaging's events: an inbound email marks its sender as having written to the organization;
 * a CRM contact (messaging's approved person) marks its address as a CRM person.
 */
@Injectable()
export class CorrespondentsConsumer {
  constructor(private readonly clock: Clock) {}

  @OnBusMessage(MessagingEvents.MessageReceived)
  async onReceived(message: BusMessage<MessageReceivedData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (!message.organization_id || d?.channel !== 'email' || typeof d.from !== 'string' || !d.from.includes('@')) return;
    await tx.query(
      `INSERT INTO email_correspondents (organization_id, address, wrote_in, updated_at) VALUES ($1, $2, true, $3)
       ON CONFLICT (organization_id, address) DO UPDATE SET wrote_in = true, updated_at = EXCLUDED.updated_at`,
      [message.organization_id, d.from.trim().toLowerCase(), this.clock.now()],
    );
  }

  @OnBusMessage(MessagingEvents.ContactCreated)
  onCreated(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    return this.contact(message, tx);
  }

  @OnBusMessage(MessagingEvents.ContactUpdated)
  onUpdated(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    return this.contact(message, tx);
  }

  private async contact(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (!message.organization_id || typeof d?.email !== 'string' || !d.email.includes('@')) return;
    const crm = d.kind === 'crm';
    await tx.query(
      `INSERT INTO email_correspondents (organization_id, address, crm_person, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, address) DO UPDATE SET crm_person = email_correspondents.crm_person OR EXCLUDED.crm_person, updated_at = EXCLUDED.updated_at`,
      [message.organization_id, d.email.trim().toLowerCase(), crm, this.clock.now()],
    );
  }
}
