import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type ContactOptedOutData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { OptOutService } from './opt-out.service.js';

/**
 * Stop means stop on every channel (seed 003 §4.7; seed 004 opt-out): when messaging marks a
 * contact opted out — a STOP on WhatsApp, an opt-out phrase in an email that answers no thread of
 * ours, an opt-out a reply interrupt could not correlate — every live outreach enrollment of that
 * person ends `opted_out` and its pending and approved actions are invalidated. Messaging has
 * already suppressed every address of the contact at the dispatcher before acknowledging the
 * webhook, so this request carries no values of its own. A correlated reply's opt-out may have
 * ended the enrollment first; the match then finds nothing live.
 */
@Injectable()
export class ContactOptedOutConsumer {
  constructor(private readonly optOut: OptOutService) {}

  @OnBusMessage(MessagingEvents.ContactOptedOut)
  async onOptedOut(message: BusMessage<ContactOptedOutData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (!message.organization_id || typeof d?.contact_id !== 'string' || d.contact_id === '') return;
    await this.optOut.apply(tx, { organization_id: message.organization_id, source: 'phrase', cause_id: d.message_id ?? message.event_id, values: [], person_ids: [d.contact_id] });
  }
}
