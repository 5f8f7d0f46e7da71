import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type ContactEventData, type ContactTagEventData, MessagingEvents } from '@touchpoint/contracts';
import { rowsOf, type Tx } from '@touchpoint/database';
import { Clock, isValidTimeZone } from '@touchpoint/time';
import { TriggerRecorder } from '../rules/trigger-recorder.js';
import { ContactsRepository } from './contacts.repository.js';

/**
 * Keeps the contacts read model (phone, email, tags) that conditions and the queue read, and
 * records the `contact_created` and `tag_added` rule triggers in the same transaction.
 */
@Injectable()
export class ContactsConsumer {
  constructor(
    private readonly contacts: ContactsRepository,
    private readonly recorder: TriggerRecorder,
    private readonly clock: Clock,
  ) {}

  private async upsert(message: BusMessage<ContactEventData & { name?: string | null }>, tx: Tx): Promise<void> {
    const d = message.data;
    // An event without the field (an older messaging) keeps what we hold; a zone luxon does not know counts as none.
    const timeZone = d.time_zone === undefined ? undefined : d.time_zone && isValidTimeZone(d.time_zone) ? d.time_zone : null;
    await this.contacts.upsertProfile(tx, { organizationId: message.organization_id!, contactId: d.contact_id, name: d.name, phone: d.phone, email: d.email, tags: d.tags, tagsAt: new Date(message.occurred_at), timeZone });
  }

  @OnBusMessage(MessagingEvents.ContactCreated)
  async onCreated(message: BusMessage<ContactEventData & { name?: string | null }>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.upsert(message, tx);
    await this.recorder.record(tx, { organizationId: message.organization_id, kind: 'contact_created', eventId: message.event_id, contactId: message.data.contact_id, at: this.clock.now() });
  }

  @OnBusMessage(MessagingEvents.ContactUpdated)
  async onUpdated(message: BusMessage<ContactEventData & { name?: string | null }>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.upsert(message, tx);
  }

  /**
   * Tags added: a `tag_added` trigger per tag the read model did not have yet. A follow-up tag step
   * writes its tags to the read model in its own release transaction, which holds the contact row
   * until it commits; taking the row FOR UPDATE here waits for it, so a tag added by a step is
   * already known and fires no rule (seed 000 "Tags added by a follow-up step do not fire rules").
   */
  @OnBusMessage(MessagingEvents.ContactTagged)
  async onTagged(message: BusMessage<ContactTagEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    const organizationId = message.organization_id;
    const [prior] = await rowsOf<{ tags: string[] }>(tx, `SELECT tags FROM contacts WHERE organization_id = $1 AND contact_id = $2 FOR UPDATE`, [organizationId, message.data.contact_id]);
    const known = new Set(prior?.tags ?? []);
    await this.contacts.upsertProfile(tx, { organizationId, contactId: message.data.contact_id, tags: message.data.all_tags, tagsAt: new Date(message.occurred_at) });
    for (const tag of new Set(message.data.tags)) {
      if (known.has(tag)) continue;
      await this.recorder.record(tx, { organizationId, kind: 'tag_added', eventId: `${message.event_id}:${tag}`, contactId: message.data.contact_id, data: { tag }, at: this.clock.now() });
    }
  }

  @OnBusMessage(MessagingEvents.ContactUntagged)
  async onUntagged(message: BusMessage<ContactTagEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.contacts.upsertProfile(tx, { organizationId: message.organization_id, contactId: message.data.contact_id, tags: message.data.all_tags, tagsAt: new Date(message.occurred_at) });
  }
}
