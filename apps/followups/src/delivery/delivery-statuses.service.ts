import { Injectable } from '@nestjs/common';
import { isUuid, type Tx } from '@touchpoint/database';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { DeliveryStatusesRepository } from './delivery-statuses.repository.js';

/** A provider's delivery report that followups keeps on the effect (messaging's `delivered` and `read`). */
export type DeliveryReport = 'delivered' | 'read';

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
    private readonly repository: DeliveryStatusesRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly metrics: FollowupsMetrics,
  ) {}

  /**
   * Applies one report to the send effect with this idempotency key.
   * @param at when the provider says it happened (UTC instant)
   * @returns whether anything changed (false: not ours, settled as failed/cancelled, or a repeat)
   */
  async apply(tx: Tx, organizationId: string, key: string, report: DeliveryReport, detail: { messageId?: string | null; at: Date }): Promise<boolean> {
    const effect = await this.repository.lockSend(tx, organizationId, key);
    // A send that failed or was cancelled is not delivered; messaging never reports that, but a stale report must not revive it.
    if (!effect || !['queued', 'uncertain', 'sent'].includes(effect.status)) return false;
    const stamp = report === 'delivered' ? 'delivered_at' : 'read_at';
    if (effect[stamp]) return false;
    const leftNow = effect.status !== 'sent';
    await this.repository.stampReport(tx, effect.id, stamp, detail.at, isUuid(detail.messageId) ? detail.messageId : null);
    const status: DeliveryReport = report === 'read' || effect.read_at ? 'read' : 'delivered';
    // Only the enrollment's newest send speaks for `last_send.status` (a late report of an older one must not).
    await this.repository.raiseLastSendStatus(tx, effect.enrollment_id, effect.id, effect.step, status, detail.at);
    const events = [];
    if (leftNow) events.push({ organization_id: organizationId, enrollment_id: effect.enrollment_id, type: 'send_sent', node_id: effect.node_id, data: { effect_id: effect.id, error_code: null }, at: detail.at });
    events.push({ organization_id: organizationId, enrollment_id: effect.enrollment_id, type: `send_${report}`, node_id: effect.node_id, data: { effect_id: effect.id }, at: detail.at });
    await this.enrollments.insertEvents(tx, events);
    this.metrics.steps.inc({ action: 'send', outcome: report });
    return true;
  }
}
