import { Injectable } from '@nestjs/common';
import { isUuid, rowsOf, type Tx } from '@touchpoint/database';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';

/** A provider's delivery report that followups keeps on the effect (messaging's `delivered` and `read`). */
export type DeliveryReport = 'delivered' | 'read';

/** Rank of `last_send_status` values a delivery report may move: forward only. */
const RANK_SQL = `CASE last_send_status WHEN 'read' THEN 3 WHEN 'delivered' THEN 2 ELSE 0 END`;

/**
 * Keeps how far a follow-up send got after it left (seed 002 "Efeitos": the effect's status): the
 * provider's `delivered` and `read`, as messaging reports them, on the send effect (`delivered_at`,
 * `read_at`) and, for the enrollment's newest send, on `last_send_status`, which a condition on
 * `last_send.status` reads ("only if not read").
 *
 * Reports may arrive in any order and more than once (the bus redelivers, retries reorder): each
 * timestamp is set once, the derived status is `read` once a read is known whatever came after, and
 * `last_send_status` only moves up (sent → delivered → read). A report also proves the send left,
 * so an effect still `queued` or `uncertain` (its `sent` not applied yet) becomes `sent`, and a
 * later `sent` finds nothing to move.
 */
@Injectable()
export class DeliveryStatusesService {
  constructor(
    private readonly enrollments: EnrollmentsRepository,
    private readonly metrics: FollowupsMetrics,
  ) {}

  /**
   * Applies one report to the send effect with this idempotency key.
   * @param at when the provider says it happened (UTC instant)
   * @returns whether anything changed (false: not ours, settled as failed/cancelled, or a repeat)
   */
  async apply(tx: Tx, organizationId: string, key: string, report: DeliveryReport, detail: { messageId?: string | null; at: Date }): Promise<boolean> {
    const [effect] = await rowsOf<{ id: string; enrollment_id: string; node_id: string; step: number; status: string; delivered_at: Date | null; read_at: Date | null }>(
      tx,
      `SELECT id, enrollment_id, node_id, step, status, delivered_at, read_at FROM effects
        WHERE idempotency_key = $1 AND organization_id = $2 AND kind = 'send' FOR UPDATE`,
      [key, organizationId],
    );
    // A send that failed or was cancelled is not delivered; messaging never reports that, but a stale report must not revive it.
    if (!effect || !['queued', 'uncertain', 'sent'].includes(effect.status)) return false;
    const stamp = report === 'delivered' ? 'delivered_at' : 'read_at';
    if (effect[stamp]) return false;
    const leftNow = effect.status !== 'sent';
    await rowsOf(
      tx,
      `UPDATE effects SET ${stamp} = $2, status = 'sent', message_id = coalesce(message_id, $3::uuid), updated_at = greatest(updated_at, $2) WHERE id = $1`,
      [effect.id, detail.at, isUuid(detail.messageId) ? detail.messageId : null],
    );
    const status: DeliveryReport = report === 'read' || effect.read_at ? 'read' : 'delivered';
    // Only the enrollment's newest send speaks for `last_send.status` (a late report of an older one must not).
    await rowsOf(
      tx,
      `UPDATE enrollments SET last_send_status = $3, inflight_effect_id = CASE WHEN inflight_effect_id = $2 THEN NULL ELSE inflight_effect_id END, updated_at = $5
        WHERE id = $1 AND ${RANK_SQL} < $4
          AND (inflight_effect_id = $2 OR NOT EXISTS (
                SELECT 1 FROM effects o WHERE o.enrollment_id = $1 AND o.kind = 'send' AND o.idempotency_key IS NOT NULL AND o.step > $6))`,
      [effect.enrollment_id, effect.id, status, status === 'read' ? 3 : 2, detail.at, effect.step],
    );
    const events = [];
    if (leftNow) events.push({ organization_id: organizationId, enrollment_id: effect.enrollment_id, type: 'send_sent', node_id: effect.node_id, data: { effect_id: effect.id, error_code: null }, at: detail.at });
    events.push({ organization_id: organizationId, enrollment_id: effect.enrollment_id, type: `send_${report}`, node_id: effect.node_id, data: { effect_id: effect.id }, at: detail.at });
    await this.enrollments.insertEvents(tx, events);
    this.metrics.steps.inc({ action: 'send', outcome: report });
    return true;
  }
}
