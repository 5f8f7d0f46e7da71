import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf, type Tx } from '@touchpoint/database';
import type { EntryRow } from '../drain/outbox.repository.js';

/** Why a suppressed entry is cancelled, as its row and its event say it. */
export const SUPPRESSED_CODE = 'suppressed';
const SUPPRESSED_MESSAGE = 'the recipient was put on the suppression list before the attempt started';

/** Every SQL statement of the do-not-contact list (`contact_suppressions`). */
@Injectable()
export class SuppressionsRepository {
  /** Inserts the row; false when the value was on the list already (a repeat is a no-op). */
  async add(tx: Tx, organizationId: string, channel: string, value: string, reason: string | null, now: Date): Promise<boolean> {
    const rows = await rowsOf(
      tx,
      `INSERT INTO contact_suppressions (organization_id, channel, value, reason, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (organization_id, channel, value) DO NOTHING RETURNING value`,
      [organizationId, channel, value, reason, now],
    );
    return rows.length === 1;
  }

  /** Deletes the row; false when the value was not on the list (nothing deleted). */
  async remove(tx: Tx, organizationId: string, channel: string, value: string): Promise<boolean> {
    const rows = await rowsOf(tx, `DELETE FROM contact_suppressions WHERE organization_id = $1 AND channel = $2 AND value = $3 RETURNING value`, [organizationId, channel, value]);
    return rows.length === 1;
  }

  /**
   * Cancels every `pending` entry of the organization to `pacingKey` on `channel`, whoever queued
   * it. Only `pending`: a `sending` entry belongs to the dispatcher holding its claim, and its
   * attempt either opened before this transaction commits (already on its way to the wire) or will
   * meet the suppression at the pre-wire gate (`AttemptsRepository.openAttempt`). A claim racing this
   * statement holds the row lock; the UPDATE waits for it and then skips the row it no longer
   * finds `pending`.
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

  /** Which of `keys` (channel and recipient key) are on the organization's list. */
  async onList(db: Queryable, organizationId: string, keys: { channel: string; value: string }[]): Promise<{ channel: string; value: string }[]> {
    return rowsOf<{ channel: string; value: string }>(db, `SELECT channel, value FROM contact_suppressions WHERE organization_id = $1 AND (channel, value) IN (SELECT * FROM unnest($2::text[], $3::text[]))`, [organizationId, keys.map((k) => k.channel), keys.map((k) => k.value)]);
  }
}
