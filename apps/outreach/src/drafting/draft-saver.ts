import { Inject, Injectable } from '@nestjs/common';
import type { DraftPayload, OutboundActionType } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { DecisionsRepository } from '../decisions/decisions.repository.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { ActionsRepository } from '../review/actions.repository.js';
import { isUniqueViolation } from '@touchpoint/database';

export interface DraftSaveInput {
  organization_id: string;
  enrollment_id: string;
  campaign_id: string;
  decision_id: string;
  /** The version the decision save moved the enrollment to (v+1). */
  version: number;
  type: OutboundActionType;
  draft: DraftPayload;
  run_id: string | null;
}

/** Points between the three writes where a test can make a reply land (fault injection). */
export interface DraftSaveHooks {
  afterInvalidate?: () => Promise<void>;
  afterInsert?: () => Promise<void>;
}

/**
 * The draft save (seed 003 §4.4): three writes, each its own transaction, in an order that leaves
 * no stale draft whenever a reply lands:
 * 1. an older pending action of this enrollment → invalidated;
 * 2. INSERT the action `pending_approval` (one per decision; one pending per enrollment);
 * 3. the gate: `next_check_at = null WHERE context_version = v+1`; 0 rows → our action
 *    invalidated and the decision discarded.
 * A reply before the insert makes the gate find 0 rows; between the insert and the gate, the
 * reply invalidates our action and the gate finds 0 rows; after the gate, the reply invalidates it.
 * Each write is safe to repeat, so a retried step converges.
 */
@Injectable()
export class DraftSaver {
  /** Test-only fault injection between the writes. */
  hooks: DraftSaveHooks = {};

  constructor(
    private readonly uow: UnitOfWork,
    private readonly actions: ActionsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly decisions: DecisionsRepository,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * @returns the action id and whether it waits for review (`pending`) or lost to a reply
   * @throws the unique violation of the one-pending index when a racing run holds the slot (the
   *   step retry invalidates that action first)
   */
  async save(input: DraftSaveInput): Promise<{ action_id: string; outcome: 'pending' | 'discarded' }> {
    await this.uow.run((tx) => this.actions.invalidateOlderPending(tx, input.enrollment_id, input.decision_id, this.clock.now()));
    await this.hooks.afterInvalidate?.();

    let actionId: string;
    try {
      const action = await this.uow.run((tx) =>
        this.actions.insertPending(tx, { organization_id: input.organization_id, enrollment_id: input.enrollment_id, campaign_id: input.campaign_id, decision_id: input.decision_id, type: input.type, draft: input.draft, run_id: input.run_id, now: this.clock.now() }),
      );
      actionId = action.id;
    } catch (err) {
      if (isUniqueViolation(err, 'proposed_actions_one_pending')) {
        this.logger.warn({ event: 'outreach.draft_slot_taken', organization_id: input.organization_id, enrollment_id: input.enrollment_id, decision_id: input.decision_id }, 'another pending draft holds the slot; retrying');
      }
      throw err;
    }
    await this.hooks.afterInsert?.();

    return this.uow.run(async (tx) => {
      const now = this.clock.now();
      const gate = await this.enrollments.compareAndSet(tx, input.enrollment_id, input.version, { next_check_at: null }, now, { bump: false, onlyStatus: ['active'] });
      if (gate) return { action_id: actionId, outcome: 'pending' as const };
      await this.actions.invalidateOne(tx, actionId, ['pending_approval'], 'context_changed', now);
      await this.decisions.setOutcome(tx, input.decision_id, 'discarded', null, now);
      return { action_id: actionId, outcome: 'discarded' as const };
    });
  }
}
