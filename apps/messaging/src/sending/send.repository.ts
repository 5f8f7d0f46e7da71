import { Injectable } from '@nestjs/common';
import { rowFromJson, type Tx, genericPlan } from '@touchpoint/database';
import type { ContactRow } from '../contacts/contacts.repository.js';
import type { InstanceRow } from '../conversations/conversations.repository.js';
import type { MessageRow, NewMessage } from '../messages/messages.repository.js';

/** What the first read of a send finds: the message of its key, and the contact it names. */
export interface SendStart {
  existing: MessageRow | null;
  contact: ContactRow | null;
}

/** What `startBatch` finds for a consumer batch of sends: the messages of their keys and the contacts they name. */
export interface SendBatchStart {
  /** By `sendKeyOf(organization_id, idempotency_key)`. */
  messages: Map<string, MessageRow>;
  /** By `sendKeyOf(organization_id, contact id)`: a contact is only found in its own organization. */
  contacts: Map<string, ContactRow>;
}

/** An outbound message of the send path as it is written, without its instance (`insertInActiveInstance` finds or opens that). */
export type NewSend = Omit<NewMessage, 'instance_id' | 'external_id' | 'thread_id' | 'notification_id' | 'headers' | 'provider_timestamp' | 'auto_reply' | 'opt_out'>;

/** One key of an organization as a map key (an organization id holds no NUL). */
export const sendKeyOf = (organizationId: string, key: string): string => `${organizationId}\u0000${key}`;

/** What `insertInActiveInstance` wrote: the instance the message went into (null: none could be opened), whether this statement opened it, and the message (null: its key or provider id had a row already). */
export interface SendInsert {
  instance: InstanceRow | null;
  opened: boolean;
  message: MessageRow | null;
}

const CONTACT_TIMESTAMPS = ['opted_out_at', 'erased_at', 'created_at', 'updated_at'] as const;
const INSTANCE_TIMESTAMPS = ['started_at', 'last_message_at', 'closed_at'] as const;

/**
 * The statements of the shared send path that span its tables (seed 004 "Enqueue before wire"):
 * a send is four statements (this read, the conversation's lock-or-create, this insert, the
 * outbox rows) where it was eight; a consumer batch of sends reads and inserts all of its
 * messages with one statement each (`startBatch`, `insertBatch`).
 */
@Injectable()
export class SendRepository {
  /**
   * The message already written for `key` and the contact `contactId` (when given), in one read:
   * two probes, of `messages_idempotency_uidx` and of the contacts primary key.
   */
  async start(tx: Tx, organizationId: string, key: string, contactId: string | null): Promise<SendStart> {
    // The left join from one row keeps the message's columns typed (null when the key is new).
    const [row] = await tx.query<MessageRow & { contact_json: Record<string, unknown> | null }>(
      `SELECT m.*, (SELECT to_jsonb(c) FROM contacts c WHERE c.organization_id = $1 AND c.id = $3::uuid) AS contact_json
         FROM (SELECT 1) AS one LEFT JOIN messages m ON m.organization_id = $1 AND m.idempotency_key = $2`,
      [organizationId, key, contactId],
    );
    const { contact_json: contact, ...message } = row;
    return { existing: message.id ? (message as MessageRow) : null, contact: rowFromJson<ContactRow>(contact, CONTACT_TIMESTAMPS) };
  }

  /**
   * `start` for a consumer batch of sends, in one read: the message already written for each key
   * and the contact each names (null: none), one probe of `messages_idempotency_uidx` and of the
   * contacts primary key per send (a join from the list, as `start` probes for one).
   */
  async startBatch(tx: Tx, sends: { organizationId: string; key: string; contactId: string | null }[]): Promise<SendBatchStart> {
    const rows = await tx.query<MessageRow & { contact_json: Record<string, unknown> | null }>(
      `SELECT m.*, (SELECT to_jsonb(c) FROM contacts c WHERE c.organization_id = s.organization_id AND c.id = s.contact_id) AS contact_json
         FROM unnest($1::text[], $2::text[], $3::uuid[]) AS s(organization_id, idempotency_key, contact_id)
         LEFT JOIN messages m ON m.organization_id = s.organization_id AND m.idempotency_key = s.idempotency_key`,
      [sends.map((s) => s.organizationId), sends.map((s) => s.key), sends.map((s) => s.contactId)],
    );
    const start: SendBatchStart = { messages: new Map(), contacts: new Map() };
    for (const { contact_json: json, ...message } of rows) {
      if (message.id) start.messages.set(sendKeyOf(message.organization_id, message.idempotency_key!), message as MessageRow);
      const contact = rowFromJson<ContactRow>(json, CONTACT_TIMESTAMPS);
      if (contact) start.contacts.set(sendKeyOf(contact.organization_id, contact.id), contact);
    }
    return start;
  }

  /**
   * Writes the outbound messages of a consumer batch of sends in one statement, each into the
   * instance given (the caller locked or opened it, under its conversation's lock), and touches
   * their conversations as `ConversationsRepository.lockOrCreateTouched` does for one (the caller
   * holds their locks, `InboundBatchRepository.lockConversations`). The i-th message (from 0) is
   * created at its `created_at` + i µs (and sent at its `sent_at` + i µs, if any), so the
   * messages of one conversation keep the batch's order in the thread (created_at, id) and each
   * still reads as its `created_at` to the millisecond; a conversation is touched at its last
   * message's instant, also when that message is not written. A message whose key already has a
   * row is not written (the unique index decides, as in `insertInActiveInstance`). The AFTER
   * INSERT trigger counts each on its instance.
   * @returns the written rows by `sendKeyOf(organization_id, idempotency_key)`
   */
  async insertBatch(tx: Tx, messages: (NewSend & { instance_id: string })[]): Promise<Map<string, MessageRow>> {
    if (messages.length === 0) return new Map();
    const col = <K extends keyof (typeof messages)[number]>(k: K) => messages.map((m) => m[k] ?? null);
    const json = (k: 'payload' | 'context') => messages.map((m) => (m[k] === undefined || m[k] === null ? null : JSON.stringify(m[k])));
    const rows = await tx.query<MessageRow>(
      genericPlan(`WITH m AS (
         SELECT * FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
                              $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::uuid[], $19::timestamptz[], $20::timestamptz[])
                WITH ORDINALITY AS m(organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, sender_id, message_type, body,
                                     subject, status, in_reply_to, payload, idempotency_key, requester, context, notification_delivery_id, created_at, sent_at, ord)
       ), touched AS (
         UPDATE conversations c
            SET last_message_at = GREATEST(COALESCE(c.last_message_at, t.at), t.at), activity_at = GREATEST(c.activity_at, t.at), updated_at = t.at
           FROM (SELECT conversation_id, max(created_at + make_interval(secs => (ord - 1) / 1e6)) AS at FROM m GROUP BY conversation_id) AS t
          WHERE c.id = t.conversation_id
       )
       INSERT INTO messages (organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, sender_id, message_type, body, subject,
                             status, in_reply_to, payload, idempotency_key, requester, context, notification_delivery_id, created_at, sent_at)
       SELECT organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, sender_id, message_type, body, subject,
              status, in_reply_to, payload::jsonb, idempotency_key, requester, context::jsonb, notification_delivery_id,
              created_at + make_interval(secs => (ord - 1) / 1e6), sent_at + make_interval(secs => (ord - 1) / 1e6)
         FROM m ORDER BY ord
       ON CONFLICT DO NOTHING RETURNING *`),
      [
        col('organization_id'),
        col('conversation_id'),
        col('instance_id'),
        col('contact_id'),
        col('channel'),
        col('direction'),
        col('sender_type'),
        col('sender_id'),
        col('message_type'),
        col('body'),
        col('subject'),
        col('status'),
        col('in_reply_to'),
        json('payload'),
        col('idempotency_key'),
        col('requester'),
        json('context'),
        col('notification_delivery_id'),
        col('created_at'),
        col('sent_at'),
      ],
    );
    return new Map(rows.map((r) => [sendKeyOf(r.organization_id, r.idempotency_key!), r]));
  }

  /**
   * Writes an outbound message into its conversation's active instance in one statement: the
   * active instance, locked (the idle sweep skips a locked instance, so it cannot close it under
   * the message); else the next one, opened; then the message (the AFTER INSERT trigger counts it
   * on the instance at the end of the statement). The caller holds the conversation's lock, so no
   * other writer opens an instance meanwhile; the partial unique index
   * `conversation_instances_one_active_uidx` is the backstop, and a lost race gives no instance.
   * A message whose key already has a row is not written (the unique index decides, so concurrent
   * sends of one key make one row).
   * @param m the message, without its instance
   */
  async insertInActiveInstance(tx: Tx, m: NewSend): Promise<SendInsert> {
    const [row] = await tx.query<MessageRow & { instance_json: Record<string, unknown> | null; opened: boolean }>(
      `WITH active AS MATERIALIZED (
         SELECT * FROM conversation_instances WHERE conversation_id = $2 AND status = 'active' FOR UPDATE
       ), opened AS (
         INSERT INTO conversation_instances (organization_id, conversation_id, instance_number, started_at)
         SELECT $1, $2, n.next, $18 FROM (SELECT COALESCE(max(instance_number), 0) + 1 AS next FROM conversation_instances WHERE conversation_id = $2) AS n
          WHERE NOT EXISTS (SELECT 1 FROM active)
         ON CONFLICT DO NOTHING RETURNING *
       ), instance AS (
         SELECT * FROM active UNION ALL SELECT * FROM opened
       ), message AS (
         INSERT INTO messages (organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, sender_id, message_type, body, subject,
                               status, in_reply_to, payload, idempotency_key, requester, context, notification_delivery_id, created_at, sent_at)
         SELECT $1, $2, i.id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14, $15, $16::jsonb, $17::uuid, $18, $19 FROM instance i
         ON CONFLICT DO NOTHING RETURNING *
       )
       SELECT msg.*, (SELECT to_jsonb(i) FROM instance i) AS instance_json, EXISTS (SELECT 1 FROM opened) AS opened
         FROM (SELECT 1) AS one LEFT JOIN message msg ON true`,
      [
        m.organization_id,
        m.conversation_id,
        m.contact_id,
        m.channel,
        m.direction,
        m.sender_type,
        m.sender_id ?? null,
        m.message_type,
        m.body,
        m.subject ?? null,
        m.status,
        m.in_reply_to ?? null,
        m.payload === undefined ? null : JSON.stringify(m.payload),
        m.idempotency_key ?? null,
        m.requester ?? null,
        m.context ? JSON.stringify(m.context) : null,
        m.notification_delivery_id ?? null,
        m.created_at,
        m.sent_at ?? null,
      ],
    );
    const { instance_json: instance, opened, ...message } = row;
    return { instance: rowFromJson<InstanceRow>(instance, INSTANCE_TIMESTAMPS), opened, message: message.id ? (message as MessageRow) : null };
  }
}
