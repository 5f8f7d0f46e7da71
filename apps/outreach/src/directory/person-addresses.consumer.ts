import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type ContactEventData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { Clock } from '@touchpoint/time';
import { EnrollmentsService } from '../enrollments/enrollments.service.js';
import { PersonAddressesRepository } from './person-addresses.repository.js';

/**
 * Messaging's contact events, for two things. A prospect newly linked to a CRM person is a
 * promotion (seed 003 §4.1): its live enrollment moves to that person, or ends `duplicate` when the
 * person is live elsewhere (`EnrollmentsService.promoteByLink`). And it keeps `person_addresses`
 * current from them, so the opt-out and bounce
 * match sees a person's current address (seed 003 §4.7, "The match"). Only people outreach
 * enrolled have a row; every other contact's event changes nothing. An event without the
 * contact's version (`updated_at`, published since this read model exists) counts as of the time
 * it occurred.
 */
@Injectable()
export class PersonAddressesConsumer {
  constructor(
    private readonly addresses: PersonAddressesRepository,
    private readonly enrollments: EnrollmentsService,
    private readonly clock: Clock,
  ) {}

  @OnBusMessage(MessagingEvents.ContactUpdated)
  async onUpdated(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (!message.organization_id || typeof d?.contact_id !== 'string') return;
    await this.addresses.refresh(tx, message.organization_id, { id: d.contact_id, email: d.email ?? null, linkedin_url: d.linkedin_url ?? null, linkedin_provider_id: d.linkedin_provider_id ?? null, updated_at: d.updated_at ?? message.occurred_at }, this.clock.now());
    if (d.kind === 'prospect' && typeof d.linked_contact_id === 'string' && d.linked_contact_id !== '') {
      await this.enrollments.promoteByLink(tx, message.organization_id, d.contact_id, d.linked_contact_id);
    }
  }

  @OnBusMessage(MessagingEvents.ContactErased)
  async onErased(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id || typeof message.data?.contact_id !== 'string') return;
    await this.addresses.clear(tx, message.organization_id, message.data.contact_id, this.clock.now());
  }
}
