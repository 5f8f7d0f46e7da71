import { Injectable } from '@nestjs/common';
import { isUuid, type Tx } from '@touchpoint/database';
import { EffectsRepository } from '../effects/effects.repository.js';
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
    private readonly effects: EffectsRepository,
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
    const effect = await this.effects.recordSendOutcome(tx, { organizationId, idempotencyKey: key, outcome, from, messageId: isUuid(detail.messageId) ? detail.messageId : null, errorCode: detail.errorCode ?? null, at: detail.at });
    if (!effect) {
      // The dispatcher's report may have settled the effect first; messaging's still names the message.
      if (isUuid(detail.messageId)) {
        await this.effects.fillMessageId(tx, organizationId, key, detail.messageId);
      }
      return false;
    }
    await this.enrollments.settleInflight(tx, effect.enrollment_id, effect.id, outcome, detail.at, outcome !== 'uncertain');
    await this.enrollments.insertEvents(tx, [{ organization_id: organizationId, enrollment_id: effect.enrollment_id, type: `send_${outcome}`, node_id: effect.node_id, data: { effect_id: effect.id, error_code: detail.errorCode ?? null }, at: detail.at }]);
    this.metrics.steps.inc({ action: 'send', outcome });
    return true;
  }
}
