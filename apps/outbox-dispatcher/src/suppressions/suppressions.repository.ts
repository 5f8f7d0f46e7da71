import { Injectable } from '@nestjs/common';
import { cursorAtSql, type CursorPosition, type Queryable, rowsOf, type Tx } from '@touchpoint/database';
import type { EntryRow } from '../drain/outbox.repository.js';
import { recipientLockKeys } from './recipient-lock.js';

/** Why a suppressed entry is cancelled, as its row and its event say it. */
export const SUPPRESSED_CODE = 'suppressed';
const SUPPRESSED_MESSAGE = 'the recipient was put on the suppression list before the attempt started';

/** A `contact_suppressions` row as the list reads it, with its keyset position. */
export interface SuppressionRow {
  public_id: string;
  channel: string;
  value: string;
  reason: string | null;
  note: string | null;
  added_by: string | null;
  created_at: Date;
  /** `created_at` to the microsecond (the cursor's position). */
  cursor_at: string;
}

/** Who added a row by hand and why (code adds with neither). */
export interface SuppressionAuthor {
  note: string | null;
  addedBy: string | null;
}

/** Every SQL statement of the do-not-contact list (`contact_suppressions`). */
@Injectable()
export class SuppressionsRepository {
  /** Inserts the row; false when the value was on the list already (a repeat is a no-op: the first note stays). */
  async add(tx: Tx, organizationId: string, channel: string, value: string, reason: string | null, now: Date, author: SuppressionAuthor = { note: null, addedBy: null }): Promise<boolean> {
    const rows = await rowsOf(
      tx,
      `INSERT INTO contact_suppressions (organization_id, channel, value, reason, created_at, note, added_by) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (organization_id, channel, value) DO NOTHING RETURNING value`,
      [organizationId, channel, value, reason, now, author.note, author.addedBy],
    );
    return rows.length === 1;
  }

  /**
   * Deletes the row and records its removal (the row's own facts, the remover's note and who) in
   * one statement, so a removal is never left unrecorded; null when the value was not on the list
   * (nothing deleted, nothing recorded).
   */
  async remove(tx: Tx, organizationId: string, channel: string, value: string, now: Date, removal: { note: string | null; removedBy: string | null } = { note: null, removedBy: null }): Promise<{ removed_at: Date } | null> {
    const rows = await rowsOf<{ removed_at: Date }>(
      tx,
      `WITH gone AS (
         DELETE FROM contact_suppressions WHERE organization_id = $1 AND channel = $2 AND value = $3
         RETURNING organization_id, channel, value, reason, note, added_by, created_at
       )
       INSERT INTO contact_suppression_removals (organization_id, channel, value, reason, added_note, added_by, added_at, note, removed_by, removed_at)
       SELECT organization_id, channel, value, reason, note, added_by, created_at, $4, $5, $6 FROM gone
       RETURNING removed_at`,
      [organizationId, channel, value, removal.note, removal.removedBy, now],
    );
    return rows[0] ?? null;
  }

  /**
   * One page of the organization's list, newest first (`created_at`, then `public_id`, both
   * descending, which the page index serves), after the keyset position `after`. `contains`
   * matches part of the value or of the note, any case (`ILIKE`; its wildcards are escaped).
   */
  async page(db: Queryable, organizationId: string, filter: { contains?: string; channel?: string }, limit: number, after: CursorPosition | null): Promise<SuppressionRow[]> {
    const pattern = filter.contains ? `%${filter.contains.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    return rowsOf<SuppressionRow>(
      db,
      `SELECT public_id, channel, value, reason, note, added_by, created_at, ${cursorAtSql('created_at')} AS cursor_at
         FROM contact_suppressions
        WHERE organization_id = $1
          AND ($2::text IS NULL OR channel = $2)
          AND ($3::text IS NULL OR value ILIKE $3 OR note ILIKE $3)
          AND ($4::timestamptz IS NULL OR (created_at, public_id) < ($4::timestamptz, $5::uuid))
        ORDER BY created_at DESC, public_id DESC
        LIMIT $6`,
      [organizationId, filter.channel ?? null, pattern, after?.createdAt ?? null, after?.id ?? null, limit],
    );
  }

  /**
   * Cancels every `pending` entry of the organization to `pacingKey` on `channel`, whoever queued
   * it. Only `pending`: a `sending` entry belongs to the dispatcher holding its claim, and its
   * attempt either opened before the add took the recipient's lock (already on its way to the
   * wire; `SuppressionsService.addInForce` waits for it) or will meet the suppression at the
   * pre-wire gate (`AttemptsRepository.openAttempts`). A claim racing this statement holds the row
   * lock; the UPDATE waits for it, then cancels the row if the claim handed it back `pending`
   * (it met this add's lock) and skips it otherwise.
   */
  async cancelPendingTo(tx: Tx, organizationId: string, channel: string, pacingKey: string, now: Date): Promise<EntryRow[]> {
    return rowsOf<EntryRow>(
      tx,
      `UPDATE message_outbox
          SET status = 'cancelled', last_classification = 'suppressed', last_error_code = $4, last_error_message = $5, settled_at = $6, updated_at = $6
        WHERE organization_id = $1 AND channel = $2 AND pacing_key = $3 AND status = 'pending'
        RETURNING *`,
      [organizationId, channel, pacingKey, SUPPRESSED_CODE, SUPPRESSED_MESSAGE, now],
    );
  }

  /**
   * Takes the recipient's lock exclusively until `tx` ends (`recipientLockKeys`), waiting for
   * every pre-wire gate that holds it: once it returns, each attempt to this recipient that passed
   * a gate without seeing the list's row has committed as `open`. The first statement of an add.
   */
  async lockRecipient(tx: Tx, organizationId: string, channel: string, pacingKey: string): Promise<void> {
    await rowsOf(tx, `SELECT pg_advisory_xact_lock(${recipientLockKeys('$1::text', '$2::text', '$3::text')})`, [organizationId, channel, pacingKey]);
  }

  /**
   * How many attempts to the recipient are open (their request handed to the provider, no answer
   * recorded yet). Read through the open-attempts index, which holds only the sends in progress.
   */
  async openAttemptsTo(db: Queryable, organizationId: string, channel: string, pacingKey: string): Promise<number> {
    const [row] = await rowsOf<{ n: number }>(
      db,
      `SELECT count(*)::int AS n FROM message_outbox_attempts a JOIN message_outbox e ON e.id = a.entry_id
        WHERE a.outcome = 'open' AND e.organization_id = $1 AND e.channel = $2 AND e.pacing_key = $3`,
      [organizationId, channel, pacingKey],
    );
    return row?.n ?? 0;
  }

  /** Which of `keys` (channel and recipient key) are on the organization's list. */
  async onList(db: Queryable, organizationId: string, keys: { channel: string; value: string }[]): Promise<{ channel: string; value: string }[]> {
    return rowsOf<{ channel: string; value: string }>(db, `SELECT channel, value FROM contact_suppressions WHERE organization_id = $1 AND (channel, value) IN (SELECT * FROM unnest($2::text[], $3::text[]))`, [organizationId, keys.map((k) => k.channel), keys.map((k) => k.value)]);
  }
}
