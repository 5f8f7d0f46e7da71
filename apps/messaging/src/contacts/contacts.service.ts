import { Injectable } from '@nestjs/common';
import { IANAZone } from 'luxon';
import {
  CONTACT_KINDS,
  type ContactCreateData,
  type ContactEventData,
  type ContactKind,
  type ContactTagEventData,
  type ContactUpdateData,
  type BusPayload,
  type ContactView,
  MessagingEvents,
  type MessagingPage,
  type OutboxCancelData,
  OutboxCommands,
  type OutgoingMessage,
} from '@touchpoint/contracts';
import { decodeCursor, encodeCursor, isUuid, pageSize, poolOf, type Queryable, requireId, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { isEmailAddress, toPhoneKey } from '@touchpoint/phone';
import { UnitOfWork } from '@touchpoint/runtime';
import { codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { StreamRepository } from '../stream/stream.repository.js';
import { type ContactFields, type ContactRow, ContactsRepository, toContactView } from './contacts.repository.js';

/** The contact events this service publishes (each also goes on the real-time feed). */
type ContactEventType = (typeof MessagingEvents)['ContactCreated' | 'ContactUpdated' | 'ContactErased' | 'ContactTagged' | 'ContactUntagged'];

/** Longest tag, characters; most tags per contact. */
export const MAX_TAG_LENGTH = 64;
export const MAX_TAGS = 100;

const LINKEDIN_URL = /^https?:\/\/([a-z]{2,3}\.)?(www\.)?linkedin\.com\/(in|pub)\/[^/\s]+\/?$/i;

function invalid(field: string, message: string): AppError {
  return new AppError(ErrorCode.ValidationFailed, message, { field });
}

/** E.164 (`+5511987654321`) and its matching key from any notation; null when absent. */
export function normalizePhone(phone: unknown): { phone: string; phone_key: string } | null {
  if (phone === undefined || phone === null || phone === '') return null;
  const key = typeof phone === 'string' ? toPhoneKey(phone) : null;
  if (!key) throw invalid('phone', 'phone is not a valid phone number (E.164, or international digits)');
  return { phone: `+${key}`, phone_key: key };
}

function normalizeTags(tags: unknown): string[] {
  if (tags === undefined || tags === null) return [];
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string' || t.trim() === '' || codePointLength(t) > MAX_TAG_LENGTH)) {
    throw invalid('tags', `tags must be non-empty strings of at most ${MAX_TAG_LENGTH} characters`);
  }
  const unique = [...new Set(tags.map((t: string) => t.trim()))];
  if (unique.length > MAX_TAGS) throw invalid('tags', `at most ${MAX_TAGS} tags`);
  return unique;
}

/**
 * Contacts: create, read, update, list, tag, untag, erase, and the find-or-create the
 * inbound paths use. Phones are stored E.164 with a matching key that treats a Brazilian mobile
 * with and without its ninth digit as one number (libs/phone).
 */
@Injectable()
export class ContactsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: ContactsRepository,
    private readonly stream: StreamRepository,
    private readonly clock: Clock,
  ) {}

  /** Validates and normalises the writable fields present in `data`. @throws AppError validation_failed */
  private fieldsOf(data: Partial<ContactCreateData>, creating: boolean): Partial<ContactFields> {
    const f: Partial<ContactFields> = {};
    if (creating || data.kind !== undefined) {
      const kind = (data.kind ?? 'crm') as ContactKind;
      if (!CONTACT_KINDS.includes(kind)) throw invalid('kind', `kind must be one of ${CONTACT_KINDS.join(', ')}`);
      f.kind = kind;
    }
    if (creating || data.name !== undefined) {
      if (data.name !== undefined && data.name !== null && (typeof data.name !== 'string' || codePointLength(data.name) > 200)) throw invalid('name', 'name must be a string of at most 200 characters');
      f.name = data.name?.trim() || null;
    }
    if (creating || data.phone !== undefined) {
      const p = normalizePhone(data.phone);
      f.phone = p?.phone ?? null;
      f.phone_key = p?.phone_key ?? null;
    }
    if (creating || data.email !== undefined) {
      if (data.email && (typeof data.email !== 'string' || !isEmailAddress(data.email.trim()))) throw invalid('email', 'email is not a valid address');
      f.email = data.email?.trim() || null;
      f.email_key = f.email?.toLowerCase() ?? null;
    }
    if (creating || data.linkedin_url !== undefined) {
      if (data.linkedin_url && (typeof data.linkedin_url !== 'string' || !LINKEDIN_URL.test(data.linkedin_url.trim()))) throw invalid('linkedin_url', 'linkedin_url must be a linkedin.com/in/ profile URL');
      f.linkedin_url = data.linkedin_url?.trim() || null;
    }
    if (creating || data.linkedin_provider_id !== undefined) f.linkedin_provider_id = data.linkedin_provider_id?.trim() || null;
    if (creating) f.tags = normalizeTags(data.tags);
    if (creating || data.custom_fields !== undefined) {
      const cf = data.custom_fields ?? {};
      if (typeof cf !== 'object' || Array.isArray(cf)) throw invalid('custom_fields', 'custom_fields must be an object');
      f.custom_fields = cf;
    }
    if (creating || data.time_zone !== undefined) {
      if (data.time_zone && !IANAZone.isValidZone(data.time_zone)) throw invalid('time_zone', 'time_zone must be an IANA zone such as America/Sao_Paulo');
      f.time_zone = data.time_zone || null;
    }
    if (creating || data.user_type !== undefined) {
      if (data.user_type !== undefined && (typeof data.user_type !== 'string' || !/^[a-z0-9_-]{1,32}$/.test(data.user_type))) throw invalid('user_type', 'user_type must be a short lowercase tier name');
      f.user_type = data.user_type ?? 'all';
    }
    return f;
  }

  /** @throws AppError conflict (with the existing contact id) when the phone or email is taken */
  async create(data: ContactCreateData): Promise<ContactView> {
    const fields = this.fieldsOf(data, true) as ContactFields;
    // A contact nobody can name or reach is not a record anyone asked for.
    if (!fields.name && !fields.phone && !fields.email && !fields.linkedin_url && !fields.linkedin_provider_id) {
      throw new AppError(ErrorCode.ValidationFailed, 'a contact needs at least one of name, phone, email, linkedin_url or linkedin_provider_id');
    }
    return this.uow.run(async (tx) => {
      const row = await this.repository.insert(tx, data.organization_id, fields, this.clock.now());
      if (!row) {
        const existing = (fields.phone_key && (await this.repository.findByPhoneKey(tx, data.organization_id, fields.phone_key))) || (fields.email_key && (await this.repository.findByEmailKey(tx, data.organization_id, fields.email_key)));
        throw new AppError(ErrorCode.Conflict, 'a contact with this phone or email exists', { contact_id: existing ? existing.id : null });
      }
      await this.announceCreated(tx, row);
      return toContactView(row);
    });
  }

  /** @throws AppError not_found */
  async get(organizationId: string, contactId: string): Promise<ContactView> {
    requireId(contactId, 'contact');
    // One statement on the pool, no transaction: a single-row read needs no snapshot of its own,
    // and BEGIN and COMMIT were two of the three round trips of every `GET /contacts/{id}`.
    return toContactView(await this.mustFind(poolOf(this.uow.dataSource), organizationId, contactId));
  }

  /** `lock` (FOR UPDATE) only holds inside a transaction: pass a `Tx` with it. */
  async mustFind(db: Queryable, organizationId: string, contactId: string, lock = false): Promise<ContactRow> {
    const row = await this.repository.findById(db, organizationId, requireId(contactId, 'contact'), lock);
    if (!row) throw new AppError(ErrorCode.NotFound, 'contact not found');
    return row;
  }

  /**
   * @throws AppError not_found (also for an erased contact), validation_failed (also a link that is
   *   not from a prospect to a live CRM contact of the organization), conflict
   */
  async update(data: ContactUpdateData): Promise<ContactView> {
    const { organization_id: organizationId, contact_id: contactId, linked_contact_id: link, ...rest } = data;
    requireId(contactId, 'contact');
    const fields = this.fieldsOf(rest, false);
    return this.uow.run(async (tx) => {
      let row: ContactRow | null;
      try {
        row = await this.repository.update(tx, organizationId, contactId, fields, this.clock.now());
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw new AppError(ErrorCode.Conflict, 'a contact with this phone or email exists');
        throw err;
      }
      if (!row) throw new AppError(ErrorCode.NotFound, 'contact not found');
      if (link !== undefined) row = await this.link(tx, row, link);
      await this.publish(tx, row, MessagingEvents.ContactUpdated, `messaging.contact.updated:${row.id}:${row.updated_at.toISOString()}`, {
        contact_id: row.id,
        kind: row.kind,
        phone: row.phone,
        email: row.email,
        linkedin_url: row.linkedin_url,
        linkedin_provider_id: row.linkedin_provider_id,
        linked_contact_id: row.linked_contact_id ?? null,
        tags: row.tags,
        time_zone: row.time_zone,
        updated_at: row.updated_at.toISOString(),
      } satisfies ContactEventData);
      return toContactView(row);
    });
  }

  /**
   * A prospect's link to its CRM person (seed 003 §4.1), or none (null). Only a prospect is linked,
   * and only to a live CRM contact of the same organization other than itself.
   * @throws AppError validation_failed
   */
  private async link(tx: Tx, row: ContactRow, link: string | null): Promise<ContactRow> {
    if (link !== null) {
      if (!isUuid(link)) throw invalid('linked_contact_id', 'linked_contact_id must be a contact id or null');
      if (row.kind !== 'prospect') throw invalid('linked_contact_id', 'only a prospect can be linked to a CRM person');
      const target = link === row.id ? null : await this.repository.findById(tx, row.organization_id, link);
      if (!target || target.erased_at || target.kind !== 'crm') throw invalid('linked_contact_id', 'linked_contact_id must name a CRM contact of the organization');
    }
    return (await this.repository.setLink(tx, row.organization_id, row.id, link, this.clock.now()))!;
  }

  async list(organizationId: string, query: { cursor?: string; limit?: number; tag?: string; kind?: ContactKind }): Promise<MessagingPage<ContactView>> {
    const limit = pageSize(query.limit);
    const filters = { tag: query.tag, kind: query.kind };
    const after = query.cursor ? decodeCursor(query.cursor, filters, { acceptUnversioned: true }) : null;
    return this.uow.run(async (tx) => {
      const rows = await this.repository.list(tx, organizationId, { tag: query.tag, kind: query.kind, after }, limit + 1);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return { items: page.map(toContactView), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
    });
  }

  /** Adds tags; emits `messaging.contact.tagged` with only the tags that were new. */
  async tag(organizationId: string, contactId: string, tags: string[]): Promise<ContactView> {
    return this.changeTags(organizationId, contactId, normalizeTags(tags), 'tag');
  }

  /** Removes tags; emits `messaging.contact.untagged` with only the tags that were there. */
  async untag(organizationId: string, contactId: string, tags: string[]): Promise<ContactView> {
    return this.changeTags(organizationId, contactId, normalizeTags(tags), 'untag');
  }

  private async changeTags(organizationId: string, contactId: string, tags: string[], op: 'tag' | 'untag'): Promise<ContactView> {
    if (tags.length === 0) throw invalid('tags', 'give at least one tag');
    return this.uow.run(async (tx) => {
      const current = await this.mustFind(tx, organizationId, contactId, true);
      if (current.erased_at) throw new AppError(ErrorCode.NotFound, 'contact not found');
      const before = new Set(current.tags);
      const changed = op === 'tag' ? tags.filter((t) => !before.has(t)) : tags.filter((t) => before.has(t));
      if (changed.length === 0) return toContactView(current);
      const next = op === 'tag' ? [...current.tags, ...changed] : current.tags.filter((t) => !changed.includes(t));
      if (next.length > MAX_TAGS) throw invalid('tags', `at most ${MAX_TAGS} tags`);
      const row = (await this.repository.update(tx, organizationId, contactId, { tags: next }, this.clock.now()))!;
      const data: ContactTagEventData = { contact_id: row.id, tags: changed, all_tags: row.tags };
      const type = op === 'tag' ? MessagingEvents.ContactTagged : MessagingEvents.ContactUntagged;
      await this.publish(tx, row, type, `${type}:${row.id}:${row.updated_at.toISOString()}`, data);
      return toContactView(row);
    });
  }

  /** Wipes the contact's personal fields and message bodies; emits `messaging.contact.erased`. */
  async erase(organizationId: string, contactId: string): Promise<ContactView> {
    return this.uow.run(async (tx) => {
      const existing = await this.mustFind(tx, organizationId, contactId, true);
      if (existing.erased_at) return toContactView(existing);
      const { row, queuedKeys } = (await this.repository.erase(tx, organizationId, contactId, this.clock.now()))!;
      await this.publish(tx, row, MessagingEvents.ContactErased, `messaging.contact.erased:${row.id}`, { contact_id: row.id, kind: row.kind } satisfies ContactEventData);
      // An erased person gets nothing more from us: the sends still queued to them are taken back
      // (an entry already on the wire is not; the cancel of a key whose entry is not written yet is
      // kept, so it is born cancelled). Each outcome comes back as messaging.message.cancelled.
      if (queuedKeys.length > 0) {
        await tx.publish(queuedKeys.map((key) => ({ event_id: `outbox.cancel:erased:${organizationId}:${key}`, type: OutboxCommands.Cancel, organization_id: organizationId, data: { organization_id: organizationId, idempotency_key: key } satisfies OutboxCancelData })));
      }
      return toContactView(row);
    });
  }

  /**
   * Meta's `system` message "the user changed number" (its system messages webhook:
   * `system.type` `user_changed_number`, `customer_changed_number` before Graph v12): the contact
   * that had `from` now has `newWaId` as its phone (E.164) in `tx`, and `messaging.contact.updated`
   * says so with the previous phone. No contact, an unreadable number, or a new number another
   * contact holds already changes nothing.
   * @returns what happened
   */
  async changeWhatsAppNumber(tx: Tx, organizationId: string, from: string, newWaId: string, wamid: string): Promise<'changed' | 'unchanged' | 'no_contact' | 'invalid' | 'conflict'> {
    const oldKey = toPhoneKey(from);
    const newKey = toPhoneKey(newWaId);
    if (!oldKey || !newKey) return 'invalid';
    const contact = await this.repository.findByPhoneKey(tx, organizationId, oldKey);
    if (!contact) return 'no_contact';
    if (contact.phone_key === newKey) return 'unchanged';
    const holder = await this.repository.findByPhoneKey(tx, organizationId, newKey);
    if (holder && holder.id !== contact.id && holder.kind === contact.kind) return 'conflict';
    const row = await this.repository.update(tx, organizationId, contact.id, { phone: `+${newKey}`, phone_key: newKey }, this.clock.now());
    if (!row) return 'no_contact';
    await this.publish(tx, row, MessagingEvents.ContactUpdated, `messaging.contact.updated:${row.id}:number_changed:${wamid}`, {
      contact_id: row.id,
      kind: row.kind,
      phone: row.phone,
      previous_phone: contact.phone,
      email: row.email,
      tags: row.tags,
      reason: 'whatsapp_number_changed',
    });
    return 'changed';
  }

  /**
   * The live contact with this phone (either Brazilian notation), created as a CRM contact when
   * there is none. Safe under concurrent inbound messages from one new number: the loser of the
   * insert race reads the winner's row.
   */
  async findOrCreateByPhone(tx: Tx, organizationId: string, phoneKey: string, name: string | null): Promise<ContactRow> {
    const existing = await this.repository.findByPhoneKey(tx, organizationId, phoneKey);
    if (existing) return existing;
    const fields: ContactFields = {
      kind: 'crm',
      name,
      phone: `+${phoneKey}`,
      phone_key: phoneKey,
      email: null,
      email_key: null,
      linkedin_url: null,
      linkedin_provider_id: null,
      tags: [],
      custom_fields: {},
      time_zone: null,
      user_type: 'all',
    };
    const row = await this.repository.insert(tx, organizationId, fields, this.clock.now());
    if (row) {
      await this.announceCreated(tx, row);
      return row;
    }
    const winner = await this.repository.findByPhoneKey(tx, organizationId, phoneKey);
    if (!winner) throw new AppError(ErrorCode.ServiceUnavailable, 'contact creation raced; retry');
    return winner;
  }

  /** The contact for an address on a channel (email, LinkedIn id, phone), created when missing. */
  async findOrCreateByAddress(tx: Tx, organizationId: string, channel: string, address: string, name: string | null): Promise<ContactRow> {
    if (channel === 'whatsapp' || channel === 'sms') {
      const p = normalizePhone(address)!;
      return this.findOrCreateByPhone(tx, organizationId, p.phone_key, name);
    }
    const value = address.trim();
    const found = channel === 'email' ? await this.repository.findByEmailKey(tx, organizationId, value.toLowerCase()) : channel === 'linkedin' ? await this.repository.findByLinkedinId(tx, organizationId, value) : null;
    if (found) return found;
    if (channel === 'email' && !isEmailAddress(value)) throw invalid('to', 'not a valid email address');
    const fields: ContactFields = {
      kind: 'crm',
      name,
      phone: null,
      phone_key: null,
      email: channel === 'email' ? value : null,
      email_key: channel === 'email' ? value.toLowerCase() : null,
      linkedin_url: null,
      linkedin_provider_id: channel === 'linkedin' ? value : null,
      tags: [],
      custom_fields: channel === 'email' || channel === 'linkedin' ? {} : { address: value },
      time_zone: null,
      user_type: 'all',
    };
    const row = await this.repository.insert(tx, organizationId, fields, this.clock.now());
    if (row) {
      await this.announceCreated(tx, row);
      return row;
    }
    const winner = channel === 'email' ? await this.repository.findByEmailKey(tx, organizationId, value.toLowerCase()) : null;
    if (!winner) throw new AppError(ErrorCode.ServiceUnavailable, 'contact creation raced; retry');
    return winner;
  }

  private async announceCreated(tx: Tx, row: ContactRow): Promise<void> {
    const created = contactCreated(row);
    await this.publish(tx, row, created.type, created.event_id, created.data);
  }

  private async publish<K extends ContactEventType>(tx: Tx, row: ContactRow, type: K, eventId: string, data: BusPayload<K>): Promise<void> {
    const message: OutgoingMessage<K> = { event_id: eventId, type, organization_id: row.organization_id, data };
    await tx.publish(message);
    await this.stream.append(tx, row.organization_id, type, data);
  }
}

/**
 * The `messaging.contact.created` event of a new contact (also its feed item's data): shared by
 * `ContactsService` and the inbound receipt worker's batch, which creates the contacts of a
 * batch's new senders in one statement (`InboundService.openThreads`).
 */
export function contactCreated(row: ContactRow): OutgoingMessage<typeof MessagingEvents.ContactCreated> {
  return {
    event_id: `messaging.contact.created:${row.id}`,
    type: MessagingEvents.ContactCreated,
    organization_id: row.organization_id,
    data: { contact_id: row.id, kind: row.kind, phone: row.phone, email: row.email, tags: row.tags, time_zone: row.time_zone } satisfies ContactEventData,
  };
}
