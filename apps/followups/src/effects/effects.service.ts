import { Injectable } from '@nestjs/common';
import {
  type CursorPage,
  EFFECT_LIST_DEFAULT_LIMIT,
  EFFECT_LIST_MAX_LIMIT,
  EFFECT_LIST_STATUSES,
  EFFECT_RESOLUTION_OUTCOMES,
  type EffectDecisionData,
  type EffectDecisionView,
  type EffectListData,
  type EffectListItemView,
  type EffectResolveData,
  type EffectStatus,
  RESOLUTION_NOTE_MAX,
  RESOLUTION_NOTE_MIN,
} from '@touchpoint/contracts';
import { decodeCursor, encodeCursor, notFound, poolOf, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { UnitOfWork, WakeSignal } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { toEffectView } from '../enrollments/enrollment-row.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { check } from '../input-checks/input-checks.js';
import { EffectsRepository, type LockedEffect } from './effects.repository.js';

/**
 * A person's part in a step's effects (seed 002 "Efeitos"): deciding a send that waits for
 * approval, and reconciling a send whose outcome the dispatcher reported as ambiguous. The
 * gateway admits only keys created by an admin; the actor is recorded on the effect.
 */
@Injectable()
export class EffectsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly effects: EffectsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly signal: WakeSignal,
    private readonly metrics: FollowupsMetrics,
    private readonly clock: Clock,
  ) {}

  /**
   * Approves or rejects a send waiting for a decision and wakes its enrollment, which sends (after
   * re-checking the approval) or moves past the step. Repeating the same decision answers the same.
   * @returns `{ok, id, status}` with `approved` or `rejected`
   * @throws AppError not_found (no such effect in the organization); conflict when the effect is not
   *   waiting for a decision (or was decided the other way)
   */
  async decide(input: EffectDecisionData): Promise<EffectDecisionView> {
    check(input)
      .uuid('organization_id')
      .uuid('effect_id')
      .uuid('api_key_id')
      .uuid('member_id')
      .custom('approve', typeof input.approve === 'boolean' ? [] : ['approve must be a boolean'])
      .done();
    const target: EffectStatus = input.approve ? 'approved' : 'rejected';
    const now = this.clock.now();
    const status = await this.uow.run(async (tx) => {
      const effect = await this.lock(tx, input.organization_id, input.effect_id);
      if (effect.status === target && effect.kind === 'send') return target;
      if (effect.status !== 'awaiting_decision') {
        throw new AppError(ErrorCode.Conflict, `the effect is ${effect.status}, not awaiting a decision`, { status: effect.status });
      }
      await this.effects.decide(tx, { effectId: effect.id, status: target, reason: input.approve ? null : 'decision_rejected', now, apiKeyId: input.api_key_id, memberId: input.member_id });
      // Wake the enrollment only if it still stands at that visit of the node.
      await this.enrollments.wakeAtVisit(tx, effect.enrollment_id, effect.node_id, effect.step, now);
      await this.enrollments.insertEvents(tx, [{ organization_id: input.organization_id, enrollment_id: effect.enrollment_id, type: 'send_decided', node_id: effect.node_id, data: { effect_id: effect.id, approve: input.approve, api_key_id: input.api_key_id }, at: now }]);
      this.metrics.steps.inc({ action: 'decision', outcome: target });
      return target;
    });
    this.signal.wake();
    return { ok: true, id: input.effect_id, status };
  }

  /**
   * A page of the organization's effects of one status, oldest first: today the sends waiting
   * for a decision, each with its flow and contact, so a person can find and decide them without
   * opening every enrollment (the console's approval page).
   * @returns `{data: [...], next_cursor}` (next_cursor null on the last page)
   * @throws AppError validation_failed (status other than awaiting_decision, limit outside 1–100,
   *   flow_id not a uuid); invalid_cursor (bad, stale, or issued for other filters)
   */
  async list(input: EffectListData): Promise<CursorPage<EffectListItemView>> {
    check(input).uuid('organization_id').oneOf('status', EFFECT_LIST_STATUSES).uuid('flow_id', true).string('cursor', 1, 1024, true).int('limit', 1, EFFECT_LIST_MAX_LIMIT, true).done();
    const filters = { status: input.status, flow_id: input.flow_id };
    const after = input.cursor ? decodeCursor(input.cursor, filters) : undefined;
    const limit = input.limit ?? EFFECT_LIST_DEFAULT_LIMIT;
    const rows = await this.effects.page(poolOf(this.uow.dataSource), { organizationId: input.organization_id, status: input.status, flowId: input.flow_id }, after && { createdAt: after.createdAt, id: after.id }, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map((r) => ({ ...toEffectView(r), flow_id: r.flow_id, flow_name: r.flow_name, version_id: r.version_id, contact_id: r.contact_id, contact_name: r.contact_name, contact_phone: r.contact_phone })),
      next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null,
    };
  }

  /**
   * Reconciles an uncertain send with the evidence a person found: the effect takes the outcome,
   * keeps the note (and the WhatsApp message id, when given), and the enrollment's in-flight send
   * clears (so `dispatch_busy` no longer holds it).
   * @throws AppError validation_failed (outcome, note 10–2,000 characters); not_found;
   *   not_ambiguous when the send is not uncertain
   */
  async resolve(input: EffectResolveData): Promise<{ resolved: true }> {
    check(input).uuid('organization_id').uuid('effect_id').uuid('api_key_id').uuid('member_id').oneOf('outcome', EFFECT_RESOLUTION_OUTCOMES).string('note', RESOLUTION_NOTE_MIN, RESOLUTION_NOTE_MAX).string('wamid', 1, 200, true).done();
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const effect = await this.lock(tx, input.organization_id, input.effect_id);
      if (effect.kind !== 'send' || effect.status !== 'uncertain') {
        throw new AppError(ErrorCode.NotAmbiguous, `the effect is ${effect.status}; only an uncertain send is reconciled`, { status: effect.status });
      }
      const resolution = { outcome: input.outcome, note: input.note, wamid: input.wamid ?? null, api_key_id: input.api_key_id, member_id: input.member_id, at: now.toISOString() };
      await this.effects.resolve(tx, effect.id, input.outcome, resolution, now);
      await this.enrollments.settleInflight(tx, effect.enrollment_id, effect.id, input.outcome, now);
      await this.enrollments.insertEvents(tx, [{ organization_id: input.organization_id, enrollment_id: effect.enrollment_id, type: 'send_resolved', node_id: effect.node_id, data: { effect_id: effect.id, outcome: input.outcome, wamid: input.wamid ?? null }, at: now }]);
      this.metrics.steps.inc({ action: 'send', outcome: `resolved_${input.outcome}` });
    });
    return { resolved: true };
  }

  private async lock(tx: Tx, organizationId: string, effectId: string): Promise<LockedEffect> {
    const effect = await this.effects.lock(tx, organizationId, effectId);
    if (!effect) throw notFound('effect');
    return effect;
  }
}
