import { Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';
import { rowsOf } from '@touchpoint/database';

/** The sweep's statements: the due-work probe and retention pruning. */
@Injectable()
export class SweepRepository {
  /** Age of the oldest due pending entry (ms) and how many are due; for the age warning and gauge. */
  async dueProbe(tx: Tx, now: Date): Promise<{ due: number; oldestDueAt: Date | null; ambiguous: number }> {
    const [row] = await rowsOf<{ due: number; oldest: Date | null; ambiguous: number }>(
      tx,
      `SELECT (SELECT count(*)::int FROM message_outbox WHERE status = 'pending' AND next_attempt_at <= $1) AS due,
              (SELECT min(next_attempt_at) FROM message_outbox WHERE status = 'pending' AND next_attempt_at <= $1) AS oldest,
              (SELECT count(*)::int FROM message_outbox WHERE status = 'ambiguous') AS ambiguous`,
      [now],
    );
    return { due: row.due, oldestDueAt: row.oldest, ambiguous: row.ambiguous };
  }

  /**
   * Deletes settled entries past retention (accepted after `acceptedDays`, failed and cancelled
   * after `failedDays`; ambiguous never), then pairs no entry references and nobody holds.
   */
  async prune(tx: Tx, now: Date, acceptedDays: number, failedDays: number, batch: number): Promise<{ entries: number; pairs: number; statuses: number }> {
    const entries = await rowsOf(
      tx,
      `DELETE FROM message_outbox WHERE id IN (
         SELECT id FROM message_outbox
          WHERE (status = 'accepted' AND settled_at < $1::timestamptz - make_interval(days => $2))
             OR (status IN ('failed', 'cancelled') AND settled_at < $1::timestamptz - make_interval(days => $3))
          LIMIT $4) RETURNING id`,
      [now, acceptedDays, failedDays, batch],
    );
    const pairs = await rowsOf(
      tx,
      `DELETE FROM message_outbox_pairs p
        WHERE p.lease_owner IS NULL AND p.next_due_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM message_outbox e WHERE e.pair_id = p.id)
          AND p.id IN (SELECT id FROM message_outbox_pairs WHERE lease_owner IS NULL AND next_due_at IS NULL LIMIT $1)
        RETURNING p.id`,
      [batch],
    );
    const statuses = await rowsOf(tx, `DELETE FROM provider_statuses WHERE received_at < $1::timestamptz - make_interval(days => $2) RETURNING id`, [now, failedDays]);
    // A cancel-in-advance outlives any enqueue that could still be in flight by far.
    await tx.query(`DELETE FROM message_outbox_cancellations WHERE cancelled_at < $1::timestamptz - make_interval(days => $2)`, [now, failedDays]);
    return { entries: entries.length, pairs: pairs.length, statuses: statuses.length };
  }
}
