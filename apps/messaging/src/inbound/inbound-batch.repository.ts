import { Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';
import { genericPlan } from '@touchpoint/database';
import type { ContactRow } from '../contacts/contacts.repository.js';
import type { ConversationRow, InstanceRow } from '../conversations/conversations.repository.js';
import type { MessageRow, NewAttachment } from '../messages/messages.repository.js';

/** One inbound message of a receipt batch, as `insertInbound` writes it. */
export interface NewInboundMessage {
  organization_id: string;
  conversation_id: string;
  instance_id: string;
  contact_id: string;
  channel: string;
  message_type: string;
  body: string | null;
  external_id: string;
  in_reply_to: string | null;
  auto_reply: boolean;
  opt_out: boolean;
  provider_timestamp: Date;
}

/**
 * The set-based statements of the receipt worker's batch store (`InboundService.storeAdmitted`):
 * one statement for the N conversations, instances, messages, attachments or feed items of a
 * claimed batch, where the one-message path (`InboundService.take`) runs one per message. Each
 * takes arrays (`unnest`), so its text, and its prepared statement, is the same for any batch size.
 * A consumer batch of sends (`SendService.prepareBatch`) takes its phone contacts, conversations
 * and instances with the same statements, so both batches lock in one order.
 */
@Injectable()
export class InboundBatchRepository {
  /**
   * The live contact of each (organization, phone key), a CRM record before a prospect, then the
   * oldest (as `ContactsRepository.findByPhoneKey`), one probe of `contacts_phone_uidx` each.
   * @returns by `${organization_id}|${phone_key}`
   */
  async findPhoneContacts(tx: Tx, senders: { organization_id: string; phone_key: string }[]): Promise<Map<string, ContactRow>> {
    if (senders.length === 0) return new Map();
    const rows = await tx.query<ContactRow>(
      `SELECT DISTINCT ON (ct.organization_id, ct.phone_key) ct.*
         FROM unnest($1::text[], $2::text[]) AS s(organization_id, phone_key)
         JOIN contacts ct ON ct.organization_id = s.organization_id AND ct.kind IN ('crm', 'prospect') AND ct.phone_key = s.phone_key AND ct.erased_at IS NULL
        ORDER BY ct.organization_id, ct.phone_key, (ct.kind = 'crm') DESC, ct.created_at`,
      [senders.map((x) => x.organization_id), senders.map((x) => x.phone_key)],
    );
    return new Map(rows.map((r) => [`${r.organization_id}|${r.phone_key}`, r]));
  }

  /**
   * Creates CRM contacts for phones that have none (as `ContactsService.findOrCreateByPhone`
   * creates one: phone `+key`, no tags, user type `all`), one statement; a phone another
   * transaction took meanwhile is skipped (`contacts_phone_uidx`) and read again by the caller.
   * @returns the created rows
   */
  async insertPhoneContacts(tx: Tx, contacts: { organization_id: string; phone_key: string; name: string | null }[], now: Date): Promise<ContactRow[]> {
    if (contacts.length === 0) return [];
    return tx.query<ContactRow>(
      `INSERT INTO contacts (organization_id, kind, name, phone, phone_key, tags, custom_fields, user_type, created_at, updated_at)
       SELECT c.organization_id, 'crm', c.name, '+' || c.phone_key, c.phone_key, '{}', '{}'::jsonb, 'all', $4, $4
         FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS c(organization_id, phone_key, name, ord) ORDER BY c.ord
       ON CONFLICT DO NOTHING RETURNING *`,
      [contacts.map((c) => c.organization_id), contacts.map((c) => c.phone_key), contacts.map((c) => c.name), now],
    );
  }

  /**
   * The conversation of each contact on `channel`, created where missing (race-safe on
   * `conversations_contact_channel_key`, as `ConversationsRepository.ensureConversation`): the
   * existing ones are read by the same statement; one that another transaction created after this
   * statement began is missing from the answer and read again by the caller.
   * @returns by contact id
   */
  async ensureConversations(tx: Tx, contacts: { organization_id: string; contact_id: string }[], channel: string, now: Date): Promise<Map<string, ConversationRow>> {
    if (contacts.length === 0) return new Map();
    const rows = await tx.query<ConversationRow>(
      genericPlan(`WITH s AS (SELECT * FROM unnest($1::text[], $2::uuid[]) AS s(organization_id, contact_id)),
            ins AS (INSERT INTO conversations (organization_id, contact_id, channel, activity_at, created_at, updated_at)
                    SELECT s.organization_id, s.contact_id, $3, $4, $4, $4 FROM s
                    ON CONFLICT ON CONSTRAINT conversations_contact_channel_key DO NOTHING RETURNING *)
       SELECT * FROM ins
       UNION ALL
       SELECT cv.* FROM s JOIN conversations cv ON cv.organization_id = s.organization_id AND cv.contact_id = s.contact_id AND cv.channel = $3`),
      [contacts.map((c) => c.organization_id), contacts.map((c) => c.contact_id), channel, now],
    );
    return new Map(rows.map((r) => [r.contact_id, r]));
  }

  /**
   * Opens the next instance of each of these LOCKED conversations that has no active one (as
   * `ConversationsRepository.openInstance`, one statement); the partial unique index is the
   * backstop, so a conversation missing from the answer lost a race and the caller reads the winner.
   */
  async openInstances(tx: Tx, conversations: { organization_id: string; conversation_id: string }[], now: Date): Promise<InstanceRow[]> {
    if (conversations.length === 0) return [];
    return tx.query<InstanceRow>(
      genericPlan(`INSERT INTO conversation_instances (organization_id, conversation_id, instance_number, started_at)
       SELECT c.organization_id, c.conversation_id, COALESCE((SELECT max(i.instance_number) FROM conversation_instances i WHERE i.conversation_id = c.conversation_id), 0) + 1, $3
         FROM unnest($1::text[], $2::uuid[]) AS c(organization_id, conversation_id)
       ON CONFLICT DO NOTHING RETURNING *`),
      [conversations.map((c) => c.organization_id), conversations.map((c) => c.conversation_id), now],
    );
  }

  /**
   * Locks the conversations, in id order: two batches (two replicas) that share conversations take
   * them in one order and cannot deadlock; the one-message path locks a single conversation, then
   * its instance, like this (DESIGN: conversation before instance).
   */
  async lockConversations(tx: Tx, ids: string[]): Promise<Map<string, ConversationRow>> {
    const rows = await tx.query<ConversationRow>(`SELECT * FROM conversations WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, [ids]);
    return new Map(rows.map((r) => [r.id, r]));
  }

  /** The active instance of each of these (locked) conversations, locked too, in conversation order; absent when none is active. */
  async lockActiveInstances(tx: Tx, conversationIds: string[]): Promise<Map<string, InstanceRow>> {
    const rows = await tx.query<InstanceRow>(genericPlan(`SELECT * FROM conversation_instances WHERE conversation_id = ANY($1::uuid[]) AND status = 'active' ORDER BY conversation_id FOR UPDATE`), [conversationIds]);
    return new Map(rows.map((r) => [r.conversation_id, r]));
  }

  /**
   * Inserts inbound messages (sender the contact, status `received`) in one statement, in the
   * given order; one whose provider id already has a row is skipped (`messages_external_uidx`:
   * a concurrent duplicate makes one row). The i-th row is created at `now` + i µs, so the
   * messages of one conversation keep their arrival order in the thread (created_at, id) and every
   * `created_at` still reads as `now` to the millisecond. The AFTER INSERT trigger counts each on
   * its instance.
   * @returns the inserted rows by provider id
   */
  async insertInbound(tx: Tx, messages: NewInboundMessage[], now: Date): Promise<Map<string, MessageRow>> {
    if (messages.length === 0) return new Map();
    const col = <K extends keyof NewInboundMessage>(k: K) => messages.map((m) => m[k]);
    const rows = await tx.query<MessageRow>(
      `INSERT INTO messages (organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, sender_id, message_type, body,
                             status, external_id, in_reply_to, auto_reply, opt_out, provider_timestamp, created_at)
       SELECT m.organization_id, m.conversation_id, m.instance_id, m.contact_id, m.channel, 'inbound', 'contact', m.contact_id::text, m.message_type, m.body,
              'received', m.external_id, m.in_reply_to, m.auto_reply, m.opt_out, m.provider_timestamp, $13::timestamptz + make_interval(secs => (m.ord - 1) / 1e6)
         FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::boolean[], $11::boolean[], $12::timestamptz[])
              WITH ORDINALITY AS m(organization_id, conversation_id, instance_id, contact_id, channel, message_type, body, external_id, in_reply_to, auto_reply, opt_out, provider_timestamp, ord)
        ORDER BY m.ord
       ON CONFLICT DO NOTHING RETURNING *`,
      [col('organization_id'), col('conversation_id'), col('instance_id'), col('contact_id'), col('channel'), col('message_type'), col('body'), col('external_id'), col('in_reply_to'), col('auto_reply'), col('opt_out'), col('provider_timestamp'), now],
    );
    return new Map(rows.map((r) => [r.external_id!, r]));
  }

  /** The attachments of several messages, one statement. */
  async insertAttachments(tx: Tx, attachments: { organization_id: string; message_id: string; attachment: NewAttachment }[], now: Date): Promise<void> {
    if (attachments.length === 0) return;
    const col = (f: (a: (typeof attachments)[number]) => string | null | undefined) => attachments.map((a) => f(a) ?? null);
    await tx.query(
      `INSERT INTO message_attachments (organization_id, message_id, media_type, mime_type, url, provider_media_id, sha256, caption, filename, created_at)
       SELECT a.*, $10::timestamptz FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[]) AS a`,
      [
        col((a) => a.organization_id),
        col((a) => a.message_id),
        col((a) => a.attachment.media_type),
        col((a) => a.attachment.mime_type),
        col((a) => a.attachment.url),
        col((a) => a.attachment.provider_media_id),
        col((a) => a.attachment.sha256),
        col((a) => a.attachment.caption),
        col((a) => a.attachment.filename),
        now,
      ],
    );
  }

  /** Records message activity on LOCKED conversations (as `ConversationsRepository.touch` with reopen): a resolved one opens again. */
  async touchConversations(tx: Tx, ids: string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await tx.query(
      `UPDATE conversations SET last_message_at = GREATEST(COALESCE(last_message_at, $2), $2), activity_at = GREATEST(activity_at, $2),
              status = 'open', resolved_at = NULL, updated_at = $2
        WHERE id = ANY($1::uuid[])`,
      [ids, at],
    );
  }

  /** Deletes processed receipts in the caller's transaction (the batch's messages are the record now). */
  async removeReceipts(tx: Tx, ids: string[]): Promise<void> {
    if (ids.length) await tx.query(`DELETE FROM inbound_receipts WHERE id = ANY($1::bigint[])`, [ids]);
  }
}
