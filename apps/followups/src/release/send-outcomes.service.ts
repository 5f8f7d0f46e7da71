import { Injectable } from '@nestjs/common';
import { rowsOf, type Tx } from '@touchpoint/database';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { PromisesService } from '../promises/promises.service.js';

/** A send's outcome as followups records it on the effect. */
export type SendOutcome = 'sent' | 'failed' | 'cancelled' | 'uncertain';

/**
 * Applies what messaging and the dispatcher report about a queued follow-up (by its idempotency
 * key, which messaging hands to the dispatcher unchanged): the effect's status, and the
 * enrollment's in-flight marker (`dispatch_busy` clears once the outcome is final).
 */
@Injectable()
export class SendOutcomesService {
  constructor(
    private readonly enrollments: EnrollmentsRepository,
    private readonly metrics: FollowupsMetrics,
    private readonly promises: PromisesService,
  ) {}

  /**
   * Moves the effect forward: queued → sent | failed | cancelled | uncertain; uncertain → sent |
   * failed | cancelled. A late or repeated report changes nothing.
   * @returns whether an effect changed
   */
  async apply(tx: Tx, organizationId: string, key: string, outcome: SendOutcome, detail: { messageId?: string | null; errorCode?: string | null; at: Date }): Promise<boolean> {
    if (await this.promises.applySendOutcome(tx, organizationId, key, outcome, detail.errorCode ?? null, detail.at)) return true;
    const from = outcome === 'uncertain' ? ['queued'] : ['queued', 'uncertain'];
    const [effect] = await rowsOf<{ id: string; enrollment_id: string; node_id: string }>(tx, 
      `UPDATE effects SET status = $3, message_id = coalesce($4::uuid, message_id), reason = coalesce($5, reason), updated_at = $6
        WHERE idempotency_key = $1 AND organization_id = $2 AND kind = 'send' AND status = ANY($7::text[])
        RETURNING id, enrollment_id, node_id`,
      [key, organizationId, outcome, isUuid(detail.messageId) ? detail.messageId : null, detail.errorCode ?? null, detail.at, from],
    );
    if (!effect) {
      // The dispatcher's report may have settled the effect first; messaging's still names the message.
      if (isUuid(detail.messageId)) {
        await rowsOf(tx, `UPDATE effects SET message_id = $3 WHERE idempotency_key = $1 AND organization_id = $2 AND message_id IS NULL`, [key, organizationId, detail.messageId]);
      }
      return false;
    }
    await rowsOf(tx, 
      `UPDATE enrollments SET last_send_status = $3, inflight_effect_id = CASE WHEN $4 THEN NULL ELSE inflight_effect_id END, updated_at = $5
        WHERE id = $1 AND inflight_effect_id = $2`,
      [effect.enrollment_id, effect.id, outcome, outcome !== 'uncertain', detail.at],
    );
    await this.enrollments.insertEvents(tx, [
      { organization_id: organizationId, enrollment_id: effect.enrollment_id, type: `send_${outcome}`, node_id: effect.node_id, data: { effect_id: effect.id, error_code: detail.errorCode ?? null }, at: detail.at },
    ]);
    this.metrics.steps.inc({ action: 'send', outcome });
    return true;
  }
}

const isUuid = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);
