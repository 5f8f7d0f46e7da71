import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type ContactEventData, type ContactTagEventData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { ContactsRepository } from './contacts.repository.js';

/** Keeps the contacts read model (phone, email, tags) that conditions and the queue read. */
@Injectable()
export class ContactsConsumer {
  constructor(private readonly contacts: ContactsRepository) {}

  @OnBusMessage(MessagingEvents.ContactCreated)
  async onCreated(message: BusMessage<ContactEventData & { name?: string | null }>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    const d = message.data;
    await this.contacts.upsertProfile(tx, { organizationId: message.organization_id, contactId: d.contact_id, name: d.name, phone: d.phone, email: d.email, tags: d.tags });
  }

  @OnBusMessage(MessagingEvents.ContactUpdated)
  onUpdated(message: BusMessage<ContactEventData & { name?: string | null }>, tx: Tx): Promise<void> {
    return this.onCreated(message, tx);
  }

  @OnBusMessage(MessagingEvents.ContactTagged)
  async onTagged(message: BusMessage<ContactTagEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.contacts.upsertProfile(tx, { organizationId: message.organization_id, contactId: message.data.contact_id, tags: message.data.all_tags });
  }

  @OnBusMessage(MessagingEvents.ContactUntagged)
  onUntagged(message: BusMessage<ContactTagEventData>, tx: Tx): Promise<void> {
    return this.onTagged(message, tx);
  }
}
