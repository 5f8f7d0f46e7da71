import { Injectable } from '@nestjs/common';
import type { ConversationStatus, ConversationView, InstanceCloseReason, InstanceStatus, MessagingChannel } from '@touchpoint/contracts';
import { cursorAtSql, type CursorPosition, iso, type Queryable, rowsOf, type Tx } from '@touchpoint/database';
import type { ContactRow } from '../contacts/contacts.repository.js';
import { truncateText } from '@touchpoint/text';

export interface ConversationRow {
  id: string;
  organization_id: string;
  contact_id: string;
  channel: MessagingChannel;
  status: ConversationStatus;
  last_message_at: Date | null;
  activity_at: Date;
  resolved_at: Date | null;
  resolved_by: string | null;
  created_at: Date;
}

export interface InstanceRow {
  id: string;
  organization_id: string;
  conversation_id: string;
  instance_number: number;
  status: InstanceStatus;
  message_count: number;
  started_at: Date;
  last_message_at: Date | null;
  closed_at: Date | null;
  auto_closed_reason: InstanceCloseReason | null;
  summary_attempts: number;
}

/** Every SQL statement about conversations and their instances. */
/** A contact with its conversation on a channel and that conversation's active instance. */
export interface OpenThread {
  contact: ContactRow;
  conversation: ConversationRow;
  instance: InstanceRow;
}

@Injectable()
export class ConversationsRepository {
  /** The conversation of a contact on a channel, created on first use (race-safe on the unique key). */
  async ensureConversation(tx: Tx, organizationId: string, contactId: string, channel: MessagingChannel, now: Date): Promise<ConversationRow> {
    const inserted = await tx.query<ConversationRow>(
      `INSERT INTO conversations (organization_id, contact_id, channel, activity_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $4, $4)
       ON CONFLICT ON CONSTRAINT conversations_contact_channel_key DO NOTHING RETURNING *`,
      [organizationId, contactId, channel, now],
    );
    if (inserted[0]) return inserted[0];
    const [row] = await tx.query<ConversationRow>(`SELECT * FROM conversations WHERE organization_id = $1 AND contact_id = $2 AND channel = $3`, [organizationId, contactId, channel]);
    return row;
  }

  /**
   * The contact's conversation on a channel, locked and touched for an outbound message at `now`
   * (what `touch` records, without reopening), created when there is none: one statement either
   * way. The conflict's update takes the row lock that `lockConversation` takes for every other
   * message writer (FOR NO KEY UPDATE, which conflicts with their FOR UPDATE), so writers still
   * serialise per conversation; two first sends to one contact make one row (the unique key decides,
   * and the later one waits for the earlier's commit, then updates the winner).
   */
  async lockOrCreateTouched(tx: Tx, organizationId: string, contactId: string, channel: MessagingChannel, now: Date): Promise<ConversationRow> {
    const [row] = await tx.query<ConversationRow>(
      `INSERT INTO conversations AS c (organization_id, contact_id, channel, last_message_at, activity_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $4, $4, $4)
       ON CONFLICT ON CONSTRAINT conversations_contact_channel_key DO UPDATE
          SET last_message_at = GREATEST(COALESCE(c.last_message_at, $4), $4), activity_at = GREATEST(c.activity_at, $4), updated_at = $4
       RETURNING c.*`,
      [organizationId, contactId, channel, now],
    );
    return row;
  }

  /**
   * A conversation of the organization, of this contact and channel, locked and touched for an
   * outbound message at `now` (as `lockOrCreateTouched`), in one statement; null when there is
   * no such conversation (nothing is written then).
   */
  async lockTouched(tx: Tx, organizationId: string, conversationId: string, contactId: string, channel: MessagingChannel, now: Date): Promise<ConversationRow | null> {
    const rows = await rowsOf<ConversationRow>(
      tx,
      `UPDATE conversations SET last_message_at = GREATEST(COALESCE(last_message_at, $5), $5), activity_at = GREATEST(activity_at, $5), updated_at = $5
        WHERE id = $2 AND organization_id = $1 AND contact_id = $3 AND channel = $4
       RETURNING *`,
      [organizationId, conversationId, contactId, channel, now],
    );
    return rows[0] ?? null;
  }

  async findConversation(tx: Tx, organizationId: string, conversationId: string): Promise<ConversationRow | null> {
    const rows = await tx.query<ConversationRow>(`SELECT * FROM conversations WHERE organization_id = $1 AND id = $2`, [organizationId, conversationId]);
    return rows[0] ?? null;
  }

  /**
   * Locks the conversation row. Every transaction that adds a message or changes instances takes
   * this lock first, so they serialise per conversation in one order (conversation, then instance)
   * and cannot deadlock.
   */
  async lockConversation(tx: Tx, conversationId: string): Promise<ConversationRow | null> {
    const rows = await tx.query<ConversationRow>(`SELECT * FROM conversations WHERE id = $1 FOR UPDATE`, [conversationId]);
    return rows[0] ?? null;
  }

  /** Records message activity on a locked conversation; a resolved conversation opens again. */
  async touch(tx: Tx, conversationId: string, at: Date, reopen: boolean): Promise<void> {
    await tx.query(
      `UPDATE conversations SET last_message_at = GREATEST(COALESCE(last_message_at, $2), $2), activity_at = GREATEST(activity_at, $2),
              status = CASE WHEN $3 THEN 'open' ELSE status END, resolved_at = CASE WHEN $3 THEN NULL ELSE resolved_at END, updated_at = $2
        WHERE id = $1`,
      [conversationId, at, reopen],
    );
  }

  async findActiveInstance(tx: Tx, conversationId: string, lock = false): Promise<InstanceRow | null> {
    const rows = await tx.query<InstanceRow>(`SELECT * FROM conversation_instances WHERE conversation_id = $1 AND status = 'active' ${lock ? 'FOR UPDATE' : ''}`, [conversationId]);
    return rows[0] ?? null;
  }

  /**
   * Opens the next instance of a conversation. Callers hold the conversation lock; the partial
   * unique index `conversation_instances_one_active_uidx` is the backstop (a second active row
   * cannot exist), so a lost race surfaces as null and the caller reads the winner.
   */
  async openInstance(tx: Tx, organizationId: string, conversationId: string, now: Date): Promise<InstanceRow | null> {
    const rows = await tx.query<InstanceRow>(
      `INSERT INTO conversation_instances (organization_id, conversation_id, instance_number, started_at)
       SELECT $1, $2, COALESCE(max(instance_number), 0) + 1, $3 FROM conversation_instances WHERE conversation_id = $2
       ON CONFLICT DO NOTHING RETURNING *`,
      [organizationId, conversationId, now],
    );
    return rows[0] ?? null;
  }

  async closeInstance(tx: Tx, instanceId: string, reason: InstanceCloseReason, now: Date): Promise<InstanceRow | null> {
    const result = await rowsOf<InstanceRow>(tx, `UPDATE conversation_instances SET status = 'closed', closed_at = $3, auto_closed_reason = $2 WHERE id = $1 AND status = 'active' RETURNING *`, [instanceId, reason, now]);
    return result[0] ?? null;
  }

  /**
   * Closes active instances idle since `cutoff` or earlier (seed 004 "Idle closing":
   * COALESCE(last_message_at, started_at) 8 hours or more in the past → `time_limit`). SKIP LOCKED:
   * an instance a message is being added to right now is not idle; the next sweep sees it again.
   */
  async closeIdle(tx: Tx, cutoff: Date, now: Date, limit: number): Promise<(InstanceRow & { contact_id: string })[]> {
    const result = await rowsOf<InstanceRow & { contact_id: string }>(
      tx,
      `WITH idle AS (
         SELECT id FROM conversation_instances
          WHERE status = 'active' AND COALESCE(last_message_at, started_at) <= $1
          ORDER BY COALESCE(last_message_at, started_at) LIMIT $3 FOR UPDATE SKIP LOCKED)
       UPDATE conversation_instances i SET status = 'closed', closed_at = $2, auto_closed_reason = 'time_limit'
         FROM idle, conversations c
        WHERE i.id = idle.id AND c.id = i.conversation_id
       RETURNING i.*, c.contact_id`,
      [cutoff, now, limit],
    );
    return result;
  }

  /** Closed instances still without a summary (seed 004: the sweep retries them), oldest first. */
  async findUnsummarized(tx: Tx, limit: number): Promise<(InstanceRow & { contact_id: string })[]> {
    return tx.query(
      `SELECT i.*, c.contact_id FROM conversation_instances i JOIN conversations c ON c.id = i.conversation_id
        WHERE i.status = 'closed' ORDER BY i.closed_at LIMIT $1`,
      [limit],
    );
  }

  async instanceMessages(tx: Tx, instanceId: string, limit: number): Promise<{ direction: 'inbound' | 'outbound'; body: string | null; created_at: Date; channel: string }[]> {
    return tx.query(`SELECT direction, body, created_at, channel FROM messages WHERE instance_id = $1 ORDER BY created_at, id LIMIT $2`, [instanceId, limit]);
  }

  /** Stores the summary (one per instance: a retry conflicts and changes nothing) and moves the instance on. */
  async saveSummary(tx: Tx, instance: InstanceRow, summary: string, runId: string | null, now: Date): Promise<boolean> {
    const inserted = await tx.query(
      `INSERT INTO conversation_summaries (organization_id, conversation_id, instance_id, summary, run_id, created_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (instance_id) DO NOTHING RETURNING id`,
      [instance.organization_id, instance.conversation_id, instance.id, summary, runId, now],
    );
    await tx.query(`UPDATE conversation_instances SET status = 'summarized', summary_error = NULL WHERE id = $1 AND status = 'closed'`, [instance.id]);
    return inserted.length > 0;
  }

  async recordSummaryFailure(tx: Tx, instanceId: string, reason: string): Promise<void> {
    await tx.query(`UPDATE conversation_instances SET summary_attempts = summary_attempts + 1, summary_error = $2 WHERE id = $1`, [instanceId, truncateText(reason, 500)]);
  }

  async resolve(tx: Tx, conversationId: string, by: string | null, now: Date): Promise<void> {
    await tx.query(`UPDATE conversations SET status = 'resolved', resolved_at = $2, resolved_by = $3, updated_at = $2 WHERE id = $1`, [conversationId, now, by]);
  }

  async list(
    tx: Tx,
    organizationId: string,
    f: { status?: ConversationStatus; channel?: string; contact_id?: string; after?: CursorPosition | null },
    limit: number,
  ): Promise<(ConversationRow & { active_instance_id: string | null; active_instance_message_count: number | null; cursor_at: string })[]> {
    return tx.query(
      `SELECT c.*, i.id AS active_instance_id, i.message_count AS active_instance_message_count, ${cursorAtSql('c.activity_at')} AS cursor_at
         FROM conversations c LEFT JOIN conversation_instances i ON i.conversation_id = c.id AND i.status = 'active'
        WHERE c.organization_id = $1
          AND ($2::text IS NULL OR c.status = $2) AND ($3::text IS NULL OR c.channel = $3) AND ($4::uuid IS NULL OR c.contact_id = $4)
          AND ($5::timestamptz IS NULL OR (c.activity_at, c.id) < ($5::timestamptz, $6::uuid))
        ORDER BY c.activity_at DESC, c.id DESC LIMIT $7`,
      [organizationId, f.status ?? null, f.channel ?? null, f.contact_id ?? null, f.after?.createdAt ?? null, f.after?.id ?? null, limit],
    );
  }

  /**
   * The contact, conversation and active instance of a phone that has them all already, in one
   * read (the fast path of an inbound message), or null. A CRM contact wins over a prospect with
   * the same phone, then the oldest.
   */
  async findOpenThread(db: Queryable, organizationId: string, phoneKey: string, channel: MessagingChannel): Promise<OpenThread | null> {
    const rows = await rowsOf<OpenThread>(
      db,
      `SELECT to_jsonb(ct) AS contact, to_jsonb(cv) AS conversation, to_jsonb(i) AS instance
         FROM contacts ct
         JOIN conversations cv ON cv.contact_id = ct.id AND cv.channel = $3 AND cv.organization_id = ct.organization_id
         JOIN conversation_instances i ON i.conversation_id = cv.id AND i.status = 'active'
        WHERE ct.organization_id = $1 AND ct.kind IN ('crm', 'prospect') AND ct.phone_key = $2 AND ct.erased_at IS NULL
        ORDER BY (ct.kind = 'crm') DESC, ct.created_at LIMIT 1`,
      [organizationId, phoneKey, channel],
    );
    return rows[0] ?? null;
  }

  /**
   * The open WhatsApp thread of each (organization, phone key) that has one, in one read for a
   * whole batch of receipts (same choice as `findOpenThread`). A join from the list, each sender one
   * probe of `contacts_phone_uidx` (an `IN (SELECT … unnest)` was a hash join over every contact).
   * @returns by `${organization_id}|${phone_key}`
   */
  async findOpenWhatsAppThreads(db: Queryable, senders: [organizationId: string, phoneKey: string][]): Promise<Map<string, OpenThread>> {
    if (senders.length === 0) return new Map();
    const rows = await rowsOf<OpenThread & { organization_id: string; phone_key: string }>(
      db,
      `SELECT DISTINCT ON (ct.organization_id, ct.phone_key) ct.organization_id, ct.phone_key, to_jsonb(ct) AS contact, to_jsonb(cv) AS conversation, to_jsonb(i) AS instance
         FROM unnest($1::text[], $2::text[]) AS s(organization_id, phone_key)
         JOIN contacts ct ON ct.organization_id = s.organization_id AND ct.kind IN ('crm', 'prospect') AND ct.phone_key = s.phone_key AND ct.erased_at IS NULL
         JOIN conversations cv ON cv.contact_id = ct.id AND cv.channel = 'whatsapp' AND cv.organization_id = ct.organization_id
         JOIN conversation_instances i ON i.conversation_id = cv.id AND i.status = 'active'
        ORDER BY ct.organization_id, ct.phone_key, (ct.kind = 'crm') DESC, ct.created_at`,
      [senders.map((e) => e[0]), senders.map((e) => e[1])],
    );
    return new Map(rows.map((o) => [`${o.organization_id}|${o.phone_key}`, { contact: o.contact, conversation: o.conversation, instance: o.instance }]));
  }
}

export function toConversationView(r: ConversationRow & { active_instance_id?: string | null; active_instance_message_count?: number | null }): ConversationView {
  return {
    id: r.id,
    organization_id: r.organization_id,
    contact_id: r.contact_id,
    channel: r.channel,
    status: r.status,
    active_instance_id: r.active_instance_id ?? null,
    active_instance_message_count: r.active_instance_message_count ?? null,
    last_message_at: iso(r.last_message_at),
    resolved_at: iso(r.resolved_at),
    created_at: iso(r.created_at)!,
  };
}
