import { Inject, Injectable } from '@nestjs/common';
import { OutboxEvents } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { ACCEPTING_DELIVERY_STATUSES, REJECTING_DELIVERY_STATUSES } from '../ambiguous/resolution.service.js';
import { entryEvent } from '../drain/entry-events.js';
import { AttemptsRepository } from '../drain/attempts.repository.js';
import { OutboxRepository } from '../drain/outbox.repository.js';
import { PairLeaseRepository } from '../drain/pair-lease.repository.js';
import { OutboxMetrics } from '../metrics/outbox.metrics.js';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';

/** Stranded entries handled per recovery pass. */
const RECOVERY_BATCH = 500;

/** What one recovery pass did. */
export interface RecoveryReport {
  requeued: number;
  ambiguous: number;
  acceptedByEvidence: number;
  failedByEvidence: number;
  failed: number;
  freedPairs: number;
  repairedPairs: number;
}

/**
 * Lease recovery (seed 004 "Dispatch order" and the sweep): an entry left `sending` by a
 * dispatcher whose lease ran out is settled by what is known about it:
 * - correlation evidence recorded while it was sending → accepted (or failed) by that evidence;
 * - an open attempt (the process died between opening it and recording the outcome) → ambiguous,
 *   never resent (a read receipt simply fails: it has one attempt and no lasting value);
 * - no open attempt (it died while preparing) → back to pending: nothing can have been sent.
 */
@Injectable()
export class LeaseRecoveryService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: OutboxRepository,
    private readonly pairs: PairLeaseRepository,
    private readonly attempts: AttemptsRepository,
    private readonly clock: Clock,
    private readonly metrics: OutboxMetrics,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
  ) {}

  async recover(): Promise<RecoveryReport> {
    const report: RecoveryReport = { requeued: 0, ambiguous: 0, acceptedByEvidence: 0, failedByEvidence: 0, failed: 0, freedPairs: 0, repairedPairs: 0 };
    const interval = this.config.WHATSAPP_PAIR_MIN_SEND_INTERVAL_MS;
    const stranded = await this.uow.run((tx) => this.attempts.findStranded(tx, this.clock.now(), RECOVERY_BATCH));
    for (const candidate of stranded) {
      const result = await this.uow.run(async (tx) => {
        const now = this.clock.now();
        // Pair first, like every other writer of the pair, then the entry.
        await this.pairs.lockPair(tx, candidate.pair_id);
        const entry = await this.repository.findById(tx, candidate.id, true);
        if (!entry || entry.status !== 'sending' || entry.claim_fence !== candidate.claim_fence) return null;
        if (!(await this.pairs.leaseIsOver(tx, entry.pair_id, String(entry.claim_fence), now))) return null;
        const open = await this.attempts.findOpenAttempt(tx, entry.id);
        const fence = String(entry.claim_fence);
        const evidence = entry.evidence;
        let kind: keyof RecoveryReport;
        if (evidence && (ACCEPTING_DELIVERY_STATUSES.has(evidence.status) || REJECTING_DELIVERY_STATUSES.has(evidence.status))) {
          const accepted = ACCEPTING_DELIVERY_STATUSES.has(evidence.status);
          if (open) {
            await this.attempts.closeAttempt(tx, open.id, { outcome: accepted ? 'accepted' : 'failed', classification: null, providerCode: null, httpStatus: null, retryAfterMs: null, body: { source: 'lease_recovery', evidence } }, now);
          }
          const row = await this.attempts.transitionClaimed(
            tx,
            entry.id,
            fence,
            accepted
              ? { status: 'accepted', providerMessageId: evidence.provider_message_id || null, classification: null, errorCode: null, errorMessage: null, httpStatus: null }
              : { status: 'failed', classification: 'permanent', errorCode: 'provider_status_failed', errorMessage: 'the provider reported the send failed', httpStatus: null },
            now,
          );
          if (!row) return null;
          await tx.publish(entryEvent(accepted ? OutboxEvents.EntryAccepted : OutboxEvents.EntryFailed, row));
          kind = accepted ? 'acceptedByEvidence' : 'failedByEvidence';
        } else if (open) {
          const readReceipt = entry.payload_type === 'read_receipt';
          await this.attempts.closeAttempt(
            tx,
            open.id,
            { outcome: readReceipt ? 'failed' : 'ambiguous', classification: 'ambiguous', providerCode: 'lease_expired', httpStatus: null, retryAfterMs: null, body: { source: 'lease_recovery', message: 'the dispatcher holding the attempt never recorded its outcome' } },
            now,
          );
          const row = await this.attempts.transitionClaimed(
            tx,
            entry.id,
            fence,
            { status: readReceipt ? 'failed' : 'ambiguous', classification: 'ambiguous', errorCode: 'lease_expired', errorMessage: 'outcome unknown: the dispatcher stopped after opening the attempt', httpStatus: null },
            now,
          );
          if (!row) return null;
          await tx.publish(entryEvent(readReceipt ? OutboxEvents.EntryFailed : OutboxEvents.EntryAmbiguous, row));
          kind = readReceipt ? 'failed' : 'ambiguous';
        } else {
          const back = await this.attempts.requeueUnopened(tx, entry.id, fence, now, now);
          if (!back) return null;
          kind = 'requeued';
        }
        await this.pairs.recomputeFreePair(tx, entry.pair_id, now, interval);
        return { kind, entry };
      });
      if (!result) continue;
      report[result.kind]++;
      this.metrics.recovered.inc({ result: result.kind });
      this.logger.warn({ event: 'outbox.lease_recovered', result: result.kind, organization_id: result.entry.organization_id, entry_id: result.entry.id, ...result.entry.log_context }, 'stranded send recovered');
    }
    const pairs = await this.uow.run(async (tx) => ({
      freed: await this.pairs.freeExpiredPairs(tx, this.clock.now(), interval),
      repaired: await this.pairs.repairUndatedPairs(tx, this.clock.now(), interval),
    }));
    report.freedPairs = pairs.freed;
    report.repairedPairs = pairs.repaired;
    return report;
  }
}
