import { Inject, Injectable } from '@nestjs/common';
import type { FlowSettings, FlowTriggerFilter } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork, WakeSignal } from '@touchpoint/runtime';
import { truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { EnrollmentsService } from '../enrollments/enrollments.service.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { matchReply } from '../release/step-rules.js';
import { compileSegment } from './segment-sql.js';
import { type TriggerRow, TriggersRepository } from './triggers.repository.js';

/** Triggers one claim takes (seed 000 "claims triggers in batches"). */
export const TRIGGER_BATCH = 50;
/** Attempts of a trigger that keeps failing with an unexpected error before it is given up (seed 000 "given up after 5 attempts"). */
export const TRIGGER_MAX_ATTEMPTS = 5;
/** Backoff of a failed trigger: 30 s doubled per attempt, ms. */
export const triggerBackoffMs = (attempts: number): number => Math.min(30_000 * 2 ** (attempts - 1), 3_600_000);

/** What one trigger did, kept on its row. */
interface TriggerOutcome {
  rules: number;
  enrolled: string[];
  rejected: Record<string, number>;
  no_match: number;
}

/**
 * The trigger loop's unit of work (seed 000 "Rules"): claim a batch of recorded triggers (SKIP
 * LOCKED), match each against the organization's enabled rules — the trigger's filter, then its
 * segment conditions compiled to SQL — and enroll in a savepoint per rule. Business rejections
 * (already enrolled, opted out, plan limit) are counted and final; any other error rolls that
 * trigger back to its savepoint and retries it with backoff, giving up after 5 attempts. The
 * enrollment's operation key names the event and the flow, so a trigger processed twice enrolls once.
 */
@Injectable()
export class TriggersService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: TriggersRepository,
    private readonly enrollments: EnrollmentsService,
    private readonly signal: WakeSignal,
    private readonly metrics: FollowupsMetrics,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** @returns how many triggers were claimed */
  async processBatch(limit = TRIGGER_BATCH): Promise<number> {
    const now = this.clock.now();
    const claimed = await this.uow.run(async (tx) => {
      const batch = await this.repository.claimDue(tx, now, limit);
      for (const trigger of batch) {
        let outcome: TriggerOutcome;
        try {
          outcome = await tx.savepoint(() => this.processOne(tx, trigger));
        } catch (err) {
          const attempts = trigger.attempts + 1;
          const message = err instanceof Error ? err.message : String(err);
          const giveUp = attempts >= TRIGGER_MAX_ATTEMPTS;
          await this.repository.recordFailure(tx, { id: trigger.id, attempts, error: truncateText(message, 1000), nextAttemptAt: new Date(now.getTime() + triggerBackoffMs(attempts)), giveUp, now });
          // `failed` is a trigger given up (the FollowUpTriggerFailures alert counts it); `retry` one that will run again.
          this.metrics.triggers.inc({ type: trigger.type, outcome: giveUp ? 'failed' : 'retry' });
          this.logger.warn({ event: 'followups.trigger_failed', trigger_id: trigger.id, organization_id: trigger.organization_id, attempts, err: message, given_up: giveUp }, 'trigger failed');
          continue;
        }
        await this.repository.markProcessed(tx, trigger.id, now, outcome);
      }
      return batch.length;
    });
    if (claimed) this.signal.wake();
    return claimed;
  }

  private async processOne(tx: Tx, trigger: TriggerRow): Promise<TriggerOutcome> {
    const rules = await this.repository.activeRules(tx, trigger.organization_id, trigger.type);
    const outcome: TriggerOutcome = { rules: rules.length, enrolled: [], rejected: {}, no_match: 0 };
    for (const rule of rules) {
      const filter = rule.settings.trigger as FlowSettings['trigger'] & FlowTriggerFilter;
      if (!filterMatches(filter, trigger) || !(await this.inSegment(tx, filter, trigger))) {
        outcome.no_match += 1;
        this.metrics.triggers.inc({ type: trigger.type, outcome: 'no_match' });
        continue;
      }
      try {
        const conversationId = typeof trigger.data.conversation_id === 'string' ? trigger.data.conversation_id : undefined;
        const { enrollment, created } = await tx.savepoint(() =>
          this.enrollments.enrollInTx(
            tx,
            { organization_id: trigger.organization_id, flow_id: rule.id, contact_id: trigger.contact_id, operation_key: `trigger:${trigger.type}:${trigger.event_id}:${rule.id}`, ...(conversationId ? { conversation_id: conversationId } : {}) },
            'rule',
          ),
        );
        if (created) outcome.enrolled.push(enrollment.id);
        this.metrics.triggers.inc({ type: trigger.type, outcome: created ? 'enrolled' : 'duplicate' });
      } catch (err) {
        const reason = businessRejection(err);
        if (!reason) throw err;
        outcome.rejected[reason] = (outcome.rejected[reason] ?? 0) + 1;
        this.metrics.triggers.inc({ type: trigger.type, outcome: 'rejected' });
      }
    }
    return outcome;
  }

  private async inSegment(tx: Tx, filter: FlowTriggerFilter, trigger: TriggerRow): Promise<boolean> {
    if (!filter.segment) return true;
    const params: unknown[] = [trigger.organization_id, trigger.contact_id];
    const where = compileSegment(filter.segment, params);
    return this.repository.contactMatches(tx, where, params);
  }
}

/** The trigger's own filter (seed 000 "trigger filter"). */
export function filterMatches(filter: FlowTriggerFilter, trigger: { type: string; data: Record<string, unknown> }): boolean {
  switch (trigger.type) {
    case 'tag_added':
      return !filter.tag || filter.tag === trigger.data.tag;
    case 'inbound_keyword': {
      const keywords = (filter.keywords ?? []).filter((k) => typeof k === 'string');
      return keywords.length > 0 && matchReply({ branches: [{ id: 'hit', keywords }] }, typeof trigger.data.text === 'string' ? trigger.data.text : null) === 'hit';
    }
    case 'lead_status_changed':
      return !filter.status || filter.status === trigger.data.status;
    case 'deal_stage_changed':
      return !filter.stage_id || filter.stage_id === trigger.data.stage_id;
    default:
      return true;
  }
}

/** The business reasons an enrollment is refused (counted, never retried), or undefined for a fault. */
function businessRejection(err: unknown): string | undefined {
  if ((err as { constraint?: string }).constraint === 'enrollments_one_live_idx') return 'already_enrolled';
  if (!(err instanceof AppError)) return undefined;
  if (err.code === ErrorCode.AlreadyEnrolled) return 'already_enrolled';
  if (err.code === ErrorCode.PublishRequired) return 'flow_not_published';
  if (err.code === ErrorCode.Conflict) return String((err.details as { reason?: unknown } | undefined)?.reason ?? 'conflict');
  return undefined;
}
