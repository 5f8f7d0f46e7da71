import { Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';
import { type SendOutcome, SendReportsService } from '../effects/send-reports.service.js';
import { PromisesService } from '../promises/promises.service.js';

export type { SendOutcome } from '../effects/send-reports.service.js';

/**
 * Applies what messaging and the dispatcher report about a queued follow-up (by its idempotency
 * key, which messaging hands to the dispatcher unchanged): a one-off return's send on its promise,
 * an enrollment step's on its effect and the enrollment's in-flight marker (`SendReportsService`).
 */
@Injectable()
export class SendOutcomesService {
  constructor(
    private readonly reports: SendReportsService,
    private readonly promises: PromisesService,
  ) {}

  /**
   * Moves the effect forward now: queued → sent | failed | cancelled | uncertain; uncertain →
   * sent | failed | cancelled. A late or repeated report changes nothing.
   * @returns whether an effect (or promise) changed
   */
  async apply(tx: Tx, organizationId: string, key: string, outcome: SendOutcome, detail: { messageId?: string | null; errorCode?: string | null; at: Date }): Promise<boolean> {
    if (await this.promises.applySendOutcome(tx, organizationId, key, outcome, detail.errorCode ?? null, detail.at)) return true;
    const [changed] = await this.reports.apply(tx, [{ kind: 'outcome', organizationId, key, outcome, messageId: detail.messageId, errorCode: detail.errorCode, at: detail.at }]);
    return changed;
  }

  /** As `apply`, with the transaction's other send reports right before it commits (a promise's send at once). */
  async applyLater(tx: Tx, organizationId: string, key: string, outcome: SendOutcome, detail: { messageId?: string | null; errorCode?: string | null; at: Date }): Promise<void> {
    if (await this.promises.applySendOutcome(tx, organizationId, key, outcome, detail.errorCode ?? null, detail.at)) return;
    this.reports.applyLater(tx, { kind: 'outcome', organizationId, key, outcome, messageId: detail.messageId, errorCode: detail.errorCode, at: detail.at });
  }
}
