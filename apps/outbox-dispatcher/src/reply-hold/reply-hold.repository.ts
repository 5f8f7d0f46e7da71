import { Injectable } from '@nestjs/common';
import { rowsOf, type Tx } from '@touchpoint/database';

/** One person's hold: their pending stop-on-reply entries on `channel` wait until `until`. */
export interface ReplyHold {
  organizationId: string;
  channel: string;
  pacingKey: string;
  until: Date;
}

/** The reply hold's statement (column `message_outbox.stop_on_reply`). */
@Injectable()
export class ReplyHoldRepository {
  /**
   * For each hold, moves `next_attempt_at` of every PENDING entry of the organization to
   * `pacingKey` on `channel`, whichever sender queued it, that is marked `stop_on_reply`, up to
   * `until` (never earlier: a redelivered or out-of-order event changes nothing; two holds of one
   * person in a batch: the later `until`). One statement for a consumer batch of holds. A `sending`
   * entry is left alone: its claim took it already (DESIGN §5.3 lets it go); a claim racing this
   * statement holds the row lock and the update then skips the row it no longer finds pending. The
   * rows are locked in id order, so two batches holding the same person never deadlock. The pair's
   * `next_due_at` is not touched: a claim that finds its head not due releases the pair, which
   * recomputes it from the head (`PairLeaseRepository.releasePairs`). Served by
   * `message_outbox_pending_recipient_idx`.
   * @returns the entries held, with the hold that moved each
   */
  async hold(tx: Tx, holds: ReplyHold[]): Promise<{ id: string; organization_id: string; channel: string; until: Date }[]> {
    if (holds.length === 0) return [];
    return rowsOf<{ id: string; organization_id: string; channel: string; until: Date }>(
      tx,
      `WITH h AS (
         SELECT o, c, k, max(u) AS until FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS h(o, c, k, u) GROUP BY o, c, k
       ), target AS (
         SELECT m.id, h.until FROM h JOIN message_outbox m ON m.organization_id = h.o AND m.channel = h.c AND m.pacing_key = h.k
          WHERE m.status = 'pending' AND m.stop_on_reply AND m.next_attempt_at < h.until
          ORDER BY m.id FOR UPDATE OF m
       )
       UPDATE message_outbox m SET next_attempt_at = t.until FROM target t
        WHERE m.id = t.id AND m.status = 'pending' AND m.next_attempt_at < t.until
       RETURNING m.id, m.organization_id, m.channel, t.until`,
      [holds.map((h) => h.organizationId), holds.map((h) => h.channel), holds.map((h) => h.pacingKey), holds.map((h) => h.until)],
    );
  }
}
