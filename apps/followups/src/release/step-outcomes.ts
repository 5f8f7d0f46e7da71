import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { FollowupsEvents } from '@touchpoint/contracts';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import type { ReleaseContext } from './release-context.js';
import { ReleaseRepository } from './release.repository.js';

/**
 * How a step ends or waits, written the same way by the node interpreter, the send step and the AI
 * lease: a timeline entry (`event`), a step counter counted at commit (`countStep`), and the moves
 * — defer, skip, park, finish — each with its effect, timeline entry and counter.
 */
@Injectable()
export class StepOutcomes {
  constructor(
    private readonly release: ReleaseRepository,
    private readonly metrics: FollowupsMetrics,
  ) {}

  /** Moves the step to `at`; a deferral to the window, cap or quota is also shown as a schedule plan (seed 002 "planos de horário"). */
  async defer(ctx: ReleaseContext, nodeId: string, at: Date, reason: string, plan: boolean, announce = true): Promise<false> {
    const { state, now, tx } = ctx;
    state.next_run_at = at;
    this.countStep(ctx, { action: 'send', outcome: `deferred_${reason}` });
    if (plan) {
      await this.release.upsertSchedulePlan(tx, { id: randomUUID(), organizationId: state.organization_id, enrollmentId: state.id, contactId: state.contact_id, nodeId, step: state.step, reason, at, now });
      if (announce) this.event(ctx, 'deferred', { reason, until: at.toISOString() });
    }
    return false;
  }

  /** Skips a send: a `skipped` effect with the reason; the flow moves on. @returns true */
  async skip(ctx: ReleaseContext, nodeId: string, reason: string): Promise<true> {
    const { state } = ctx;
    ctx.effects.push({ id: randomUUID(), organizationId: state.organization_id, enrollmentId: state.id, contactId: state.contact_id, nodeId, step: state.step, kind: 'send', status: 'skipped', reason });
    this.event(ctx, 'step_skipped', { reason });
    this.countStep(ctx, { action: 'send', outcome: 'skipped' });
    return true;
  }

  /**
   * Skips a send whose visit may already hold its effect (an approval asked for earlier, flows with
   * `require_approval`): that effect is rejected with the reason instead of a second one written.
   */
  async skipVisit(ctx: ReleaseContext, nodeId: string, reason: string): Promise<true> {
    const existing = ctx.version.settings.require_approval ? await this.release.stepSendEffect(ctx.tx, ctx.state.id, nodeId, ctx.state.step) : undefined;
    if (!existing) return this.skip(ctx, nodeId, reason);
    if (existing.status === 'awaiting_decision' || existing.status === 'approved') await this.release.rejectEffect(ctx.tx, existing.id, reason, ctx.now);
    this.event(ctx, 'step_skipped', { reason, effect_id: existing.id });
    this.countStep(ctx, { action: 'send', outcome: 'skipped' });
    return true;
  }

  /** Parks the enrollment (`dormente`) until its cause clears. */
  park(ctx: ReleaseContext, reason: string): void {
    ctx.state.status = 'dormente';
    ctx.state.reason = reason;
    this.event(ctx, 'parked', { reason });
  }

  /** Ends the enrollment. @returns false (nothing more runs) */
  finish(ctx: ReleaseContext, status: 'completed' | 'cancelled', reason: string, action: string): false {
    const { state, now } = ctx;
    state.status = status;
    state.reason = reason;
    state.next_run_at = null;
    state.finished_at = now;
    this.event(ctx, status === 'completed' ? 'completed' : 'stopped', { reason });
    ctx.messages.push({
      event_id: `followups.enrollment.finished:${state.id}`,
      type: FollowupsEvents.EnrollmentFinished,
      organization_id: state.organization_id,
      data: { enrollment_id: state.id, flow_id: state.flow_id, contact_id: state.contact_id, status, reason },
    });
    ctx.tx.afterCommit(() => this.metrics.finished.inc({ status, reason }));
    this.countStep(ctx, { action, outcome: status });
    return false;
  }

  /** Counts a step outcome once its transaction commits: a batch that rolls back runs its rows again. */
  countStep(ctx: ReleaseContext, labels: { action: string; outcome: string }): void {
    ctx.tx.afterCommit(() => this.metrics.steps.inc(labels));
  }

  /** Adds an entry of type `type` to the enrollment's timeline, at the release's `now`, on its current node. */
  event(ctx: ReleaseContext, type: string, data: Record<string, unknown>): void {
    ctx.events.push({ organization_id: ctx.state.organization_id, enrollment_id: ctx.state.id, type, node_id: ctx.state.node_id, data, at: ctx.now });
  }
}
