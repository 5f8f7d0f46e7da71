import { truncateText } from '@touchpoint/text';
import { Injectable } from '@nestjs/common';
import type { MessageStatus, MessageView, MessagingChannel } from '@touchpoint/contracts';
import { cursorAtSql, type CursorPosition, iso, isUuid, type Queryable, rowsOf, type Tx, genericPlan } from '@touchpoint/database';

/** The advisory lock key of one organization's provider message id (SQL, over two text expressions). */
const providerIdLockKey = (organizationId: string, externalId: string) => `hashtext('messaging:provider-id:' || ${organizationId} || ':' || ${externalId})`;

/** A row of `messages`; the columns its view shows as they are come from `MessageView`. */
export interface MessageRow extends Pick<MessageView, 'conversation_id' | 'instance_id' | 'contact_id' | 'channel' | 'direction' | 'sender_type' | 'sender_id' | 'message_type' | 'body' | 'subject' | 'status' | 'external_id' | 'thread_id' | 'notification_id' | 'error_code'> {
  id: string;
  organization_id: string;
  in_reply_to: string | null;
  /** What was asked of the provider for an outbound message (the outbox payload), else null. */
  payload: unknown;
  idempotency_key: string | null;
  requester: string | null;
  context: Record<string, string | number> | null;
  notification_delivery_id: string | null;
  /** The provider's sub-code and details of a failure (Meta's `error_subcode`, `error_data.details`), else null. */
  error_subcode?: string | null;
  error_details?: string | null;
  outbox_entry_id: string | null;
  /** Inbound only: messaging's verdict (libs/text `judgeInbound`). */
  auto_reply: boolean;
  opt_out: boolean;
  created_at: Date;
  sent_at: Date | null;
  delivered_at: Date | null;
  read_at: Date | null;
  failed_at: Date | null;
}

/** A message to insert: the columns of `MessageRow` it must give, those it may give, and what only the insert reads. */
export type NewMessage = Pick<MessageRow, 'organization_id' | 'conversation_id' | 'instance_id' | 'contact_id' | 'channel' | 'direction' | 'sender_type' | 'message_type' | 'body' | 'status' | 'created_at'> &
  Partial<Pick<MessageRow, 'sender_id' | 'subject' | 'external_id' | 'thread_id' | 'in_reply_to' | 'payload' | 'idempotency_key' | 'requester' | 'context' | 'notification_id' | 'notification_delivery_id' | 'auto_reply' | 'opt_out' | 'sent_at'>> & {
    headers?: unknown;
    provider_timestamp?: Date | null;
  };

export interface NewAttachment {
  media_type: string;
  mime_type?: string | null;
  url?: string | null;
  provider_media_id?: string | null;
  sha256?: string | null;
  caption?: string | null;
  filename?: string | null;
}

/** A delivery status report for one provider message. */
export interface StatusReport {
  organization_id: string;
  channel: MessagingChannel;
  external_id: string;
  status: string;
  at: Date;
  error_code?: string | null;
  error_message?: string | null;
  /** Meta's `error_data.details` of a failed status. */
  error_details?: string | null;
}

/** A status kept for a provider id no message had yet, with its row id. */
export interface PendingStatus extends StatusReport {
  id: string;
}

/** A `pending_statuses` row, as a query or `json_agg` gives it (timestamps as Dates or as ISO text). */
interface PendingStatusRow {
  id: string | number;
  organization_id: string;
  channel: MessagingChannel;
  external_id: string;
  status: string;
  provider_timestamp: Date | string | null;
  received_at: Date | string;
  error_code: string | null;
  error_message: string | null;
  error_details: string | null;
}

/** A kept status as it is applied: at the provider's time, else when we received it. */
function pendingStatusOf(r: PendingStatusRow): PendingStatus {
  return {
    id: String(r.id),
    organization_id: r.organization_id,
    channel: r.channel,
    external_id: r.external_id,
    status: r.status,
    at: new Date(r.provider_timestamp ?? r.received_at),
    error_code: r.error_code,
    error_message: r.error_message,
    error_details: r.error_details,
  };
}

/** What `saveStatuses` writes for one locked message: its state after the moves of a transaction. */
export interface SavedStatus {
  id: string;
  status: MessageStatus;
  external_id: string | null;
  sent_at: Date | null;
  delivered_at: Date | null;
  read_at: Date | null;
  /** The failed/cancelled move made, if any, with its instant and error. */
  terminal?: 'failed' | 'cancelled' | null;
  terminal_at?: Date | null;
  error_code?: string | null;
  error_message?: string | null;
  error_subcode?: string | null;
  error_details?: string | null;
}

/** Every SQL statement about message rows, their attachments and early statuses. */
@Injectable()
export class MessagesRepository {
  /**
   * Inserts a message unless its provider id or idempotency key already has a row (the unique
   * indexes decide, so concurrent duplicates make one row); returns null for a duplicate. The
   * AFTER INSERT trigger counts it on its instance.
   */
  async insert(tx: Tx, m: NewMessage): Promise<MessageRow | null> {
    const rows = await tx.query<MessageRow>(
      `INSERT INTO messages (organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, sender_id, message_type, body, subject,
                             status, external_id, thread_id, in_reply_to, headers, payload, idempotency_key, requester, context, notification_id,
                             notification_delivery_id, auto_reply, opt_out, provider_timestamp, created_at, sent_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb, $17::jsonb, $18, $19, $20::jsonb, $21, $22, $23, $24, $25, $26, $27)
       ON CONFLICT DO NOTHING RETURNING *`,
      [
        m.organization_id,
        m.conversation_id,
        m.instance_id,
        m.contact_id,
        m.channel,
        m.direction,
        m.sender_type,
        m.sender_id ?? null,
        m.message_type,
        m.body,
        m.subject ?? null,
        m.status,
        m.external_id ?? null,
        m.thread_id ?? null,
        m.in_reply_to ?? null,
        m.headers === undefined ? null : JSON.stringify(m.headers),
        m.payload === undefined ? null : JSON.stringify(m.payload),
        m.idempotency_key ?? null,
        m.requester ?? null,
        m.context ? JSON.stringify(m.context) : null,
        m.notification_id ?? null,
        m.notification_delivery_id ?? null,
        m.auto_reply ?? false,
        m.opt_out ?? false,
        m.provider_timestamp ?? null,
        m.created_at,
        m.sent_at ?? null,
      ],
    );
    return rows[0] ?? null;
  }

  async insertAttachments(tx: Tx, organizationId: string, messageId: string, attachments: NewAttachment[], now: Date): Promise<void> {
    for (const a of attachments) {
      await tx.query(
        `INSERT INTO message_attachments (organization_id, message_id, media_type, mime_type, url, provider_media_id, sha256, caption, filename, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [organizationId, messageId, a.media_type, a.mime_type ?? null, a.url ?? null, a.provider_media_id ?? null, a.sha256 ?? null, a.caption ?? null, a.filename ?? null, now],
      );
    }
  }

  async existsExternal(db: Queryable, organizationId: string, channel: string, externalId: string): Promise<boolean> {
    const rows = await rowsOf(db, `SELECT 1 FROM messages WHERE organization_id = $1 AND channel = $2 AND external_id = $3`, [organizationId, channel, externalId]);
    return rows.length > 0;
  }

  /**
   * Which of these WhatsApp provider ids are stored already, in one read for a batch of receipts
   * (a join from the list: one probe of `messages_external_uidx` per id, never a scan of messages).
   * @returns `${organization_id}|${external_id}` of each stored one
   */
  async storedWhatsAppIds(db: Queryable, ids: { organization_id: string; external_id: string }[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await rowsOf<{ organization_id: string; external_id: string }>(
      db,
      `SELECT m.organization_id, m.external_id FROM unnest($1::text[], $2::text[]) AS s(organization_id, external_id)
         JOIN messages m ON m.organization_id = s.organization_id AND m.channel = 'whatsapp' AND m.external_id = s.external_id`,
      [ids.map((r) => r.organization_id), ids.map((r) => r.external_id)],
    );
    return new Set(rows.map((r) => `${r.organization_id}|${r.external_id}`));
  }

  /**
   * When the contact last wrote to us on a channel (UTC), or null if never: the start of WhatsApp's
   * customer-service window. The provider's timestamp is when the person sent it; the earlier of it
   * and our receipt time is taken, so a clock ahead of ours never stretches the window.
   */
  async lastInboundAt(tx: Tx, organizationId: string, contactId: string, channel: string): Promise<Date | null> {
    const [row] = await tx.query<{ at: Date | null }>(
      `SELECT max(LEAST(provider_timestamp, created_at)) AS at FROM messages
        WHERE organization_id = $1 AND contact_id = $2 AND channel = $3 AND direction = 'inbound'`,
      [organizationId, contactId, channel],
    );
    return row?.at ? new Date(row.at) : null;
  }

  async findByIdempotencyKey(tx: Tx, organizationId: string, key: string, lock = false): Promise<MessageRow | null> {
    const rows = await tx.query<MessageRow>(`SELECT * FROM messages WHERE organization_id = $1 AND idempotency_key = $2 ${lock ? 'FOR UPDATE' : ''}`, [organizationId, key]);
    return rows[0] ?? null;
  }

  async findById(tx: Tx, organizationId: string, messageId: string, lock = false): Promise<MessageRow | null> {
    const rows = await tx.query<MessageRow>(`SELECT * FROM messages WHERE organization_id = $1 AND id = $2 ${lock ? 'FOR UPDATE' : ''}`, [organizationId, messageId]);
    return rows[0] ?? null;
  }

  async findByExternalId(tx: Tx, organizationId: string, channel: string, externalId: string, lock = false): Promise<MessageRow | null> {
    const rows = await tx.query<MessageRow>(`SELECT * FROM messages WHERE organization_id = $1 AND channel = $2 AND external_id = $3 ${lock ? 'FOR UPDATE' : ''}`, [organizationId, channel, externalId]);
    return rows[0] ?? null;
  }

  /**
   * Locks, in id order and in one statement, the messages a batch of statuses names: by provider id
   * (`keys`, only a message that already has it) and by the message ids the requests hint at
   * (`hinted`, non-uuids ignored; a message of another organization is locked too, and the caller
   * checks the organization). One order for the whole batch, so two batches never deadlock on them.
   * The ids come first, as one array of the two lookups (each on its own index,
   * `messages_external_uidx` and the primary key), and the rows are then locked through the primary
   * key. Written as one `… OR …` filter, PostgreSQL used neither index and read, sorted and
   * filtered the whole table for every batch, at any size; written as `id IN (… UNION …)`, status
   * batches waited on each other's row locks past the batch lock timeout (`bench:pipeline`: many
   * rolled back to one by one).
   */
  async lockForStatuses(tx: Tx, keys: { organization_id: string; channel: string; external_id: string }[], hinted: string[]): Promise<MessageRow[]> {
    const ids = hinted.filter(isUuid);
    if (keys.length === 0 && ids.length === 0) return [];
    return tx.query<MessageRow>(
      `SELECT m.* FROM messages m
        WHERE m.id = ANY(ARRAY(
          SELECT x.id FROM messages x
           WHERE x.external_id IS NOT NULL AND (x.organization_id, x.channel, x.external_id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
          UNION
          SELECT unnest($4::uuid[])))
        ORDER BY m.id FOR UPDATE OF m`,
      [keys.map((k) => k.organization_id), keys.map((k) => k.channel), keys.map((k) => k.external_id), ids],
    );
  }

  /**
   * Writes the status moves of LOCKED messages, one statement for all of them: each row's final
   * status and provider id, the delivery stamps (each kept once set, as `setStatus` keeps them), and
   * for a message that failed or was cancelled, that move's instant and error (a message makes at
   * most one such move: nothing leaves `failed` or `cancelled`).
   */
  async saveStatuses(tx: Tx, rows: SavedStatus[]): Promise<void> {
    if (rows.length === 0) return;
    const col = <K extends keyof SavedStatus>(k: K) => rows.map((r) => r[k] ?? null);
    await tx.query(
      genericPlan(`UPDATE messages m SET status = v.status, external_id = COALESCE(m.external_id, v.external_id),
              sent_at = COALESCE(m.sent_at, v.sent_at), delivered_at = COALESCE(m.delivered_at, v.delivered_at), read_at = COALESCE(m.read_at, v.read_at),
              failed_at = CASE WHEN v.terminal = 'failed' THEN v.terminal_at ELSE m.failed_at END,
              cancelled_at = CASE WHEN v.terminal = 'cancelled' THEN v.terminal_at ELSE m.cancelled_at END,
              error_code = CASE WHEN v.terminal IS NOT NULL THEN v.error_code ELSE m.error_code END,
              error_message = CASE WHEN v.terminal = 'failed' THEN v.error_message ELSE m.error_message END,
              error_subcode = CASE WHEN v.terminal = 'failed' THEN v.error_subcode ELSE m.error_subcode END,
              error_details = CASE WHEN v.terminal = 'failed' THEN v.error_details ELSE m.error_details END
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[], $7::text[], $8::timestamptz[], $9::text[], $10::text[], $11::text[], $12::text[])
              AS v(id, status, external_id, sent_at, delivered_at, read_at, terminal, terminal_at, error_code, error_message, error_subcode, error_details)
        WHERE m.id = v.id`),
      [
        col('id'),
        col('status'),
        col('external_id'),
        col('sent_at'),
        col('delivered_at'),
        col('read_at'),
        col('terminal'),
        col('terminal_at'),
        col('error_code'),
        col('error_message'),
        col('error_subcode'),
        rows.map((r) => (r.error_details ? truncateText(r.error_details, 1000) : null)),
      ],
    );
  }

  /**
   * Serialises, until the transaction ends, the transactions about one provider message id of an
   * organization (a transaction-scoped advisory lock; other ids sharing its hash wait too): the
   * acceptance that gives a message the id and takes its pending statuses, and the status that
   * looks the id up and else keeps itself pending. Taken before any message row lock.
   */
  async lockProviderId(tx: Tx, organizationId: string, externalId: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(${providerIdLockKey('$1', '$2')})`, [organizationId, externalId]);
  }

  /** `lockProviderId` for several ids at once, in the order of their lock keys (two callers never wait on each other in a cycle). */
  async lockProviderIds(tx: Tx, organizationIds: string[], externalIds: string[]): Promise<void> {
    if (externalIds.length === 0) return;
    await tx.query(`SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT ${providerIdLockKey('o', 'x')} AS k FROM unnest($1::text[], $2::text[]) AS u(o, x) ORDER BY 1) s`, [organizationIds, externalIds]);
  }

  /**
   * Locks and reads, in id order and in one statement, the messages a batch of entry outcomes names
   * (non-uuids ignored; a message of another organization is locked too, and the caller checks
   * the organization), each with the statuses kept for the provider id its acceptance leaves it
   * with: the one it has, else `provider_id` (`take`: only for an acceptance; else none are read).
   * The statuses are read, not taken: the caller deletes the ones it applied (`deletePendingStatuses`).
   * The caller holds the provider ids' locks (`lockProviderIds`) from an earlier statement, so a
   * status kept under that lock committed before this statement's snapshot and is seen here.
   */
  async lockForOutcomes(tx: Tx, items: { id: string; provider_id: string | null; take: boolean }[]): Promise<{ message: MessageRow; pendingFor: string | null; pending: PendingStatus[] }[]> {
    const valid = items.filter((i) => isUuid(i.id));
    if (valid.length === 0) return [];
    const rows = await tx.query<MessageRow & { pending_for: string | null; pending: PendingStatusRow[] }>(
      genericPlan(`WITH wanted AS (
         SELECT id, bool_or(take) AS take, min(provider_id) AS provider_id FROM unnest($1::uuid[], $2::text[], $3::boolean[]) AS w(id, provider_id, take) GROUP BY id
       ), locked AS MATERIALIZED (
         SELECT m.* FROM messages m WHERE m.id = ANY($1::uuid[]) ORDER BY m.id FOR UPDATE
       )
       SELECT l.*, CASE WHEN w.take THEN COALESCE(l.external_id, w.provider_id) END AS pending_for,
              COALESCE((SELECT json_agg(p ORDER BY p.id) FROM pending_statuses p
                              WHERE w.take AND p.organization_id = l.organization_id AND p.channel = l.channel AND p.external_id = COALESCE(l.external_id, w.provider_id)), '[]') AS pending
         FROM locked l JOIN wanted w ON w.id = l.id ORDER BY l.id`),
      [valid.map((i) => i.id), valid.map((i) => i.provider_id), valid.map((i) => i.take)],
    );
    return rows.map(({ pending, pending_for: pendingFor, ...message }) => ({
      message: message as MessageRow,
      pendingFor,
      pending: pending.map(pendingStatusOf),
    }));
  }

  /** Deletes kept statuses that were applied (`lockForOutcomes` read them). */
  async deletePendingStatuses(tx: Tx, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await tx.query(`DELETE FROM pending_statuses WHERE id = ANY($1::bigint[])`, [ids]);
  }

  /** Gives an outbound message its provider id (the dispatcher's accepted outcome). */
  async setExternalId(tx: Tx, messageId: string, externalId: string): Promise<void> {
    await tx.query(`UPDATE messages SET external_id = COALESCE(external_id, $2) WHERE id = $1`, [messageId, externalId]);
  }

  /** Names the dispatcher's entry of an outbound message (kept once set). */
  async setOutboxEntry(tx: Tx, messageId: string, entryId: string): Promise<void> {
    await tx.query(`UPDATE messages SET outbox_entry_id = COALESCE(outbox_entry_id, $2::uuid) WHERE id = $1`, [messageId, entryId]);
  }

  /**
   * Moves a LOCKED message to `to` and stamps the instant of the reported status. The timestamps
   * of statuses that arrive late (a `delivered` after `read`) are still recorded, without moving
   * the status back: `stampOnly`.
   */
  async setStatus(tx: Tx, messageId: string, to: MessageStatus | null, reported: string, at: Date, error?: { code?: string | null; message?: string | null; subcode?: string | null; details?: string | null }): Promise<void> {
    await tx.query(
      `UPDATE messages SET status = COALESCE($2, status),
              sent_at = CASE WHEN $3 IN ('sent', 'delivered', 'read') THEN COALESCE(sent_at, $4) ELSE sent_at END,
              delivered_at = CASE WHEN $3 IN ('delivered', 'read') THEN COALESCE(delivered_at, $4) ELSE delivered_at END,
              read_at = CASE WHEN $3 = 'read' THEN COALESCE(read_at, $4) ELSE read_at END,
              failed_at = CASE WHEN $2 = 'failed' THEN $4 ELSE failed_at END,
              cancelled_at = CASE WHEN $2 = 'cancelled' THEN $4 ELSE cancelled_at END,
              error_code = CASE WHEN $2 IN ('failed', 'cancelled') THEN $5 ELSE error_code END,
              error_message = CASE WHEN $2 = 'failed' THEN $6 ELSE error_message END,
              error_subcode = CASE WHEN $2 = 'failed' THEN $7 ELSE error_subcode END,
              error_details = CASE WHEN $2 = 'failed' THEN $8 ELSE error_details END
        WHERE id = $1`,
      [messageId, to, reported, at, error?.code ?? null, error?.message ?? null, error?.subcode ?? null, error?.details ? truncateText(error.details, 1000) : null],
    );
  }

  async addPendingStatus(tx: Tx, s: StatusReport, now: Date): Promise<void> {
    await tx.query(
      `INSERT INTO pending_statuses (organization_id, channel, external_id, status, provider_timestamp, error_code, error_message, error_details, received_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [s.organization_id, s.channel, s.external_id, s.status, s.at, s.error_code ?? null, s.error_message ?? null, s.error_details ?? null, now],
    );
  }

  /** Takes (deletes and returns) the statuses kept for a provider id, in arrival order. */
  async takePendingStatuses(tx: Tx, organizationId: string, channel: string, externalId: string): Promise<StatusReport[]> {
    const result = await rowsOf<PendingStatusRow>(tx, `DELETE FROM pending_statuses WHERE organization_id = $1 AND channel = $2 AND external_id = $3 RETURNING *`, [organizationId, channel, externalId]);
    return result.sort((a, b) => Number(a.id) - Number(b.id)).map(pendingStatusOf);
  }

  /** Marks a message as the one sent for a notification's delivery. */
  async setNotification(tx: Tx, messageId: string, notificationId: string): Promise<void> {
    await tx.query(`UPDATE messages SET notification_id = $2 WHERE id = $1`, [messageId, notificationId]);
  }

  /** A conversation's messages, newest first, after a keyset cursor, with attachments; each with its cursor position. */
  async thread(tx: Tx, organizationId: string, conversationId: string, after: CursorPosition | null, limit: number): Promise<{ view: MessageView; cursor_at: string }[]> {
    const rows = await tx.query<MessageRow & { attachments: MessageView['attachments']; cursor_at: string }>(
      `SELECT m.*, ${cursorAtSql('m.created_at')} AS cursor_at, COALESCE((SELECT json_agg(json_build_object('id', a.id, 'media_type', a.media_type, 'mime_type', a.mime_type, 'url', a.url,
                                   'provider_media_id', a.provider_media_id, 'caption', a.caption) ORDER BY a.created_at)
                              FROM message_attachments a WHERE a.message_id = m.id), '[]'::json) AS attachments
         FROM messages m
        WHERE m.organization_id = $1 AND m.conversation_id = $2
          AND ($3::timestamptz IS NULL OR (m.created_at, m.id) < ($3::timestamptz, $4::uuid))
        ORDER BY m.created_at DESC, m.id DESC LIMIT $5`,
      [organizationId, conversationId, after?.createdAt ?? null, after?.id ?? null, limit],
    );
    return rows.map((r) => ({ view: toMessageView(r, r.attachments), cursor_at: r.cursor_at }));
  }
}

export function toMessageView(r: MessageRow, attachments: MessageView['attachments'] = []): MessageView {
  return {
    id: r.id,
    conversation_id: r.conversation_id,
    instance_id: r.instance_id,
    contact_id: r.contact_id,
    channel: r.channel,
    direction: r.direction,
    sender_type: r.sender_type,
    sender_id: r.sender_id,
    message_type: r.message_type,
    body: r.body,
    subject: r.subject,
    status: r.status,
    external_id: r.external_id,
    thread_id: r.thread_id,
    notification_id: r.notification_id,
    attachments,
    created_at: iso(r.created_at)!,
    sent_at: iso(r.sent_at),
    delivered_at: iso(r.delivered_at),
    read_at: iso(r.read_at),
    failed_at: iso(r.failed_at),
    error_code: r.error_code,
    error_subcode: r.error_subcode ?? null,
    error_details: r.error_details ?? null,
    outbox_entry_id: r.outbox_entry_id ?? null,
  };
}
