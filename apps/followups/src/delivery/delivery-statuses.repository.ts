import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';
import type { DeliveryReport } from './delivery-statuses.service.js';

/** Rank of `last_send_status` values a delivery report may move: forward only. */
const RANK_SQL = `CASE last_send_status WHEN 'read' THEN 3 WHEN 'delivered' THEN 2 ELSE 0 END`;

/** A send effect as a delivery report reads it. */
export interface ReportedSend {
  id: string;
  enrollment_id: string;
  node_id: string;
  step: number;
  status: string;
  delivered_at: Date | null;
  read_at: Date | null;
}

/** The statements of delivery reports on follow-up sends (see `DeliveryStatusesService`). */
@Injectable()
export class DeliveryStatusesRepository {
  /** The organization's send effect with this idempotency key, locked (reports of one send apply one at a time). */
  async lockSend(db: Queryable, organizationId: string, idempotencyKey: string): Promise<ReportedSend | undefined> {
    const [effect] = await rowsOf<ReportedSend>(
      db,
      `SELECT id, enrollment_id, node_id, step, status, delivered_at, read_at FROM effects
        WHERE idempotency_key = $1 AND organization_id = $2 AND kind = 'send' FOR UPDATE`,
      [idempotencyKey, organizationId],
    );
    return effect;
  }

  /** Sets the report's timestamp on the effect and marks it `sent` (a report proves it left); the message id only fills a gap. */
  async stampReport(db: Queryable, effectId: string, stamp: 'delivered_at' | 'read_at', at: Date, messageId: string | null): Promise<void> {
    await rowsOf(db, `UPDATE effects SET ${stamp} = $2, status = 'sent', message_id = coalesce(message_id, $3::uuid), updated_at = greatest(updated_at, $2) WHERE id = $1`, [effectId, at, messageId]);
  }

  /**
   * Moves the enrollment's `last_send_status` up to `status` (never down), and clears the send in
   * flight when it is this one. Only the enrollment's newest send speaks for it: the effect in
   * flight, or one with no keyed send of a later step.
   */
  async raiseLastSendStatus(db: Queryable, enrollmentId: string, effectId: string, step: number, status: DeliveryReport, at: Date): Promise<void> {
    await rowsOf(
      db,
      `UPDATE enrollments SET last_send_status = $3, inflight_effect_id = CASE WHEN inflight_effect_id = $2 THEN NULL ELSE inflight_effect_id END, updated_at = $5
        WHERE id = $1 AND ${RANK_SQL} < $4
          AND (inflight_effect_id = $2 OR NOT EXISTS (
                SELECT 1 FROM effects o WHERE o.enrollment_id = $1 AND o.kind = 'send' AND o.idempotency_key IS NOT NULL AND o.step > $6))`,
      [enrollmentId, effectId, status, status === 'read' ? 3 : 2, at, step],
    );
  }
}
