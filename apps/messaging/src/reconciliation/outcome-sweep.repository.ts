import { Injectable } from '@nestjs/common';
import { rowsOf, type Tx } from '@touchpoint/database';

/** An outbound message still waiting for its send outcome. */
export interface AwaitingMessage {
  id: string;
  organization_id: string;
  idempotency_key: string;
  status: 'queued' | 'ambiguous';
}

/** A notification delivery still `pending` although its message has settled. */
export interface StrandedDelivery {
  delivery_id: string;
  organization_id: string;
  message_id: string;
}

/** Channels whose sends the dispatcher owns (the others never wait for an outcome). */
const DISPATCHED_CHANNELS = ['whatsapp', 'email', 'linkedin'];

/** Every SQL statement of the outcome sweep (seed 004 "Dispatch is woken …, drained by cron"). */
@Injectable()
export class OutcomeSweepRepository {
  /**
   * Takes up to `limit` outbound messages created before `olderThan` that still wait for an
   * outcome and were not asked about since `olderThan`, least recently asked first, and stamps
   * them asked at `now`. SKIP LOCKED: two replicas never ask about the same message in one pass,
   * and a message an outcome event is moving right now is left to that event. The stamp commits
   * before the dispatcher is asked, so a message whose entry stays pending goes to the back of the
   * line instead of filling every pass.
   */
  async claimAwaiting(tx: Tx, olderThan: Date, now: Date, limit: number): Promise<AwaitingMessage[]> {
    const result = await rowsOf<AwaitingMessage>(
      tx,
      `UPDATE messages SET outcome_checked_at = $2
        WHERE id IN (SELECT id FROM messages
                      WHERE direction = 'outbound' AND status IN ('queued', 'ambiguous') AND channel = ANY($4::text[])
                        AND idempotency_key IS NOT NULL AND created_at <= $1
                        AND (outcome_checked_at IS NULL OR outcome_checked_at <= $1)
                      ORDER BY outcome_checked_at NULLS FIRST, created_at
                      LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING id, organization_id, idempotency_key, status`,
      [olderThan, now, limit, DISPATCHED_CHANNELS],
    );
    return result;
  }

  /**
   * Notification deliveries created before `olderThan` still `pending` while their message has
   * settled (sent, delivered, read, failed or cancelled): the write that should have settled them
   * did not happen.
   */
  async strandedDeliveries(tx: Tx, olderThan: Date, limit: number): Promise<StrandedDelivery[]> {
    return tx.query<StrandedDelivery>(
      `SELECT d.id AS delivery_id, d.organization_id, d.message_id
         FROM notification_deliveries d JOIN messages m ON m.id = d.message_id
        WHERE d.status = 'pending' AND d.created_at <= $1
          AND m.status IN ('sent', 'delivered', 'read', 'failed', 'cancelled')
        ORDER BY d.created_at LIMIT $2`,
      [olderThan, limit],
    );
  }

  /**
   * Deletes up to `limit` kept statuses received before `before` (they never matched a message:
   * a status storm for messages sent outside the platform would otherwise grow the table forever).
   * Oldest first, by the `received_at` index; returns how many were deleted.
   */
  async prunePendingStatuses(tx: Tx, before: Date, limit: number): Promise<number> {
    const result = await rowsOf(tx, `DELETE FROM pending_statuses WHERE id IN (SELECT id FROM pending_statuses WHERE received_at < $1 ORDER BY received_at LIMIT $2) RETURNING id`, [before, limit]);
    return result.length;
  }
}
