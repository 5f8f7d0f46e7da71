import { Injectable } from '@nestjs/common';
import { rowFromJson, type Tx } from '@touchpoint/database';
import type { ContactRow } from '../contacts/contacts.repository.js';
import type { InstanceRow } from '../conversations/conversations.repository.js';
import type { MessageRow, NewMessage } from '../messages/messages.repository.js';

/** What the first read of a send finds: the message of its key, and the contact it names. */
export interface SendStart {
  existing: MessageRow | null;
  contact: ContactRow | null;
}

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
 * outbox rows) where it was eight.
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
  async insertInActiveInstance(tx: Tx, m: Omit<NewMessage, 'instance_id' | 'external_id' | 'thread_id' | 'notification_id' | 'headers' | 'provider_timestamp' | 'auto_reply' | 'opt_out'>): Promise<SendInsert> {
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
