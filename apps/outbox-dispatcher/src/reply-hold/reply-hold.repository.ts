import { Injectable } from '@nestjs/common';
import { rowsOf, type Tx } from '@touchpoint/database';

/** The reply hold's statement (column `message_outbox.stop_on_reply`). */
@Injectable()
export class ReplyHoldRepository {
  /**
   * Moves `next_attempt_at` of every PENDING entry of the organization to `pacingKey` on `channel`,
   * whichever sender queued it, that is marked `stop_on_reply`, up to `until` (never earlier: a
   * redelivered or out-of-order event changes nothing). A `sending` entry is left alone: its claim
   * took it already (DESIGN §5.3 lets it go); a claim racing this statement holds the row lock and
   * the update then skips the row it no longer finds pending. The pair's `next_due_at` is not
   * touched: a claim that finds its head not due releases the pair, which recomputes it from the
   * head (`PairLeaseRepository.releasePairs`). Served by `message_outbox_pending_recipient_idx`.
   * @returns the entries held
   */
  async hold(tx: Tx, organizationId: string, channel: string, pacingKey: string, until: Date): Promise<string[]> {
    const rows = await rowsOf<{ id: string }>(
      tx,
      `UPDATE message_outbox SET next_attempt_at = $4
        WHERE organization_id = $1 AND channel = $2 AND pacing_key = $3 AND status = 'pending' AND stop_on_reply AND next_attempt_at < $4
        RETURNING id`,
      [organizationId, channel, pacingKey, until],
    );
    return rows.map((r) => r.id);
  }
}
