import { Injectable } from '@nestjs/common';
import { rowsOf, type Tx } from '@touchpoint/database';

/** The reply hold's statements (table `message_outbox_reply_holds`, column `message_outbox.stop_on_reply`). */
@Injectable()
export class ReplyHoldRepository {
  /**
   * In one statement: remembers that the recipient wrote (the hold lasts until the later of the
   * stored and `until`, so a redelivered or out-of-order event never shortens nor needlessly
   * extends it) and moves `next_attempt_at` of every PENDING entry of the organization to that
   * recipient on that channel, whichever sender queued it, that is marked `stop_on_reply`, up to
   * `until`. A `sending` entry is left alone: its claim took it already (DESIGN §5.3 lets it go);
   * a claim racing this statement holds the row lock and the update then skips the row it no
   * longer finds pending. The pair's `next_due_at` is not touched: a claim that finds its head not
   * due releases the pair, which recomputes it from the head (`PairLeaseRepository.releasePairs`).
   * Served by the holds' primary key and `message_outbox_pending_recipient_idx`.
   * @returns the entries held
   */
  async hold(tx: Tx, organizationId: string, channel: string, pacingKey: string, until: Date): Promise<string[]> {
    const rows = await rowsOf<{ id: string }>(
      tx,
      `WITH remembered AS (
         INSERT INTO message_outbox_reply_holds (organization_id, channel, pacing_key, held_until) VALUES ($1, $2, $3, $4)
         ON CONFLICT (organization_id, channel, pacing_key) DO UPDATE SET held_until = GREATEST(message_outbox_reply_holds.held_until, EXCLUDED.held_until)
       )
       UPDATE message_outbox SET next_attempt_at = $4
        WHERE organization_id = $1 AND channel = $2 AND pacing_key = $3 AND status = 'pending' AND stop_on_reply AND next_attempt_at < $4
        RETURNING id`,
      [organizationId, channel, pacingKey, until],
    );
    return rows.map((r) => r.id);
  }

  /** Deletes holds that ended before `now` (the sweep's pruning; `message_outbox_reply_holds_until_idx`). */
  async pruneExpired(tx: Tx, now: Date): Promise<number> {
    return (await rowsOf(tx, `DELETE FROM message_outbox_reply_holds WHERE held_until < $1 RETURNING 1`, [now])).length;
  }
}
