import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  type CursorPage,
  ENROLLMENT_CONTROL_ACTIONS,
  FOLLOWUP_ENROLLMENT_STATUSES,
  type EnrollmentControlData,
  type EnrollmentCreateData,
  type EnrollmentDetailView,
  type EnrollmentListData,
  type FollowupEnrollmentRef,
  type FollowupEnrollmentView,
  FollowupsEvents,
} from '@touchpoint/contracts';
import { notFound, poolOf, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork, WakeSignal } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { AgentsService } from '../agents/agents.service.js';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import { type CompiledVersion, FlowVersionCache } from '../flows/flow-version-cache.js';
import { FlowsRepository } from '../flows/flows.repository.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { decodeCursor, encodeCursor } from '@touchpoint/database';
import { codePointLength } from '@touchpoint/text';
import { check, revisionConflict } from '../input-checks/input-checks.js';
import { SettingsService } from '../settings/settings.service.js';
import { type EnrollmentRow, toEffectView, toEnrollmentView, toEventView } from './enrollment-row.js';
import { EnrollmentsRepository } from './enrollments.repository.js';

/** List limits (seed 002 "GET /ai/followups/enrollments": limit 1–200, default 100). */
export const ENROLLMENT_LIST_DEFAULT_LIMIT = 100;
export const ENROLLMENT_LIST_MAX_LIMIT = 200;

const FINISHED = new Set(['completed', 'cancelled', 'dead']);
const PAUSED = new Set(['paused_manual', 'paused_handoff', 'dormente']);

/**
 * Enrollments (seed 002 "Inscrições"; seed 000 `enroll()`): one live per flow × contact, the
 * operation key makes a repeated request return the same enrollment, control pauses, resumes,
 * cancels or runs the current wait now, and refuses while a send is in flight (`dispatch_busy`).
 */
@Injectable()
export class EnrollmentsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly enrollments: EnrollmentsRepository,
    private readonly flows: FlowsRepository,
    private readonly versions: FlowVersionCache,
    private readonly contacts: ContactsRepository,
    private readonly agents: AgentsService,
    private readonly settings: SettingsService,
    private readonly metrics: FollowupsMetrics,
    private readonly signal: WakeSignal,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Enrolls a contact in a flow's published version. The same `operation_key` returns the same
   * enrollment (`created: false`).
   * @throws AppError not_found (flow, agent), agent_followup_disabled, flow_not_allowed_for_agent,
   *   publish_required, conflict (flow not active, contact opted
   *   out or erased, plan limit), already_enrolled (a live one exists), idempotency_conflict (the
   *   key was used for another flow, contact or agent), validation_failed
   */
  async create(input: EnrollmentCreateData, source = 'api'): Promise<{ enrollment: FollowupEnrollmentView; created: boolean }> {
    check(input)
      .uuid('organization_id')
      .uuid('flow_id')
      .uuid('contact_id')
      .uuid('conversation_id', true)
      .uuid('agent_id', true)
      .uuid('appointment_id', true)
      .uuid('sender_id', true)
      .string('operation_key', 1, 200)
      .custom('variables', variablesProblems(input.variables))
      .custom('anchor_at', input.anchor_at === undefined || !Number.isNaN(Date.parse(input.anchor_at)) ? [] : ['anchor_at must be an ISO-8601 instant'])
      .done();
    const existing = await this.enrollments.findByOperationKey(poolOf(this.uow.dataSource), input.organization_id, input.operation_key);
    if (existing) return this.repeated(existing, input, source);
    try {
      const row = await this.uow.run((tx) => this.insert(tx, input));
      this.metrics.enrollments.inc({ source, result: 'enrolled' });
      if (row.next_run_at && row.next_run_at <= this.clock.now()) this.signal.wake();
      return { enrollment: toEnrollmentView(row), created: true };
    } catch (err) {
      const constraint = (err as { constraint?: string }).constraint;
      if (constraint === 'enrollments_operation_key') {
        // A concurrent request with the same key won the insert: answer with its enrollment.
        const winner = await this.enrollments.findByOperationKey(poolOf(this.uow.dataSource), input.organization_id, input.operation_key);
        if (winner) return this.repeated(winner, input, source);
      }
      if (constraint === 'enrollments_one_live_idx') {
        this.metrics.enrollments.inc({ source, result: 'already_enrolled' });
        throw new AppError(ErrorCode.AlreadyEnrolled, 'the contact already has a live enrollment in this flow');
      }
      if (err instanceof AppError) this.metrics.enrollments.inc({ source, result: err.code });
      throw err;
    }
  }

  /**
   * Enrolls inside the caller's transaction (a rule's savepoint, seed 000 "Rules"): the same
   * checks as `create`; a repeated operation key answers the enrollment it made.
   * @throws AppError as `create` (publish_required, conflict with `reason`), or the database's
   *   unique violation of the one-live index (the caller rolls its savepoint back)
   */
  async enrollInTx(tx: Tx, input: EnrollmentCreateData, source: string): Promise<{ enrollment: FollowupEnrollmentView; created: boolean }> {
    const existing = await this.enrollments.findByOperationKey(tx, input.organization_id, input.operation_key);
    if (existing) return { enrollment: toEnrollmentView(existing), created: false };
    const row = await this.insert(tx, input);
    this.metrics.enrollments.inc({ source, result: 'enrolled' });
    return { enrollment: toEnrollmentView(row), created: true };
  }

  private repeated(existing: EnrollmentRow, input: EnrollmentCreateData, source: string): { enrollment: FollowupEnrollmentView; created: boolean } {
    // Another agent with the same key is another request: answering the first would skip the new agent's check (seed 002).
    const sameAgent = (existing.agent_id ?? '').toLowerCase() === (input.agent_id ?? '').toLowerCase();
    if (existing.flow_id !== input.flow_id || existing.contact_id !== input.contact_id || !sameAgent) {
      throw new AppError(ErrorCode.IdempotencyConflict, 'this operation_key was used for another flow, contact or agent', { enrollment_id: existing.id });
    }
    this.metrics.enrollments.inc({ source, result: 'duplicate' });
    return { enrollment: toEnrollmentView(existing), created: false };
  }

  private async insert(tx: Tx, input: EnrollmentCreateData): Promise<EnrollmentRow> {
    const now = this.clock.now();
    const flow = await this.flows.find(tx, input.organization_id, input.flow_id);
    if (!flow) throw notFound('flow');
    if (!flow.published_version_id) throw new AppError(ErrorCode.PublishRequired, 'the flow has no published version');
    if (flow.status !== 'active') throw new AppError(ErrorCode.Conflict, `the flow is ${flow.status}; activate it to enroll contacts`, { reason: 'flow_not_active', flow_status: flow.status });
    // An agent enrolls only with follow-ups enabled, into the flows its current version lists (seed 002).
    if (input.agent_id) await this.agents.assertMayEnroll(tx, input.organization_id, input.agent_id, flow.id);
    const organization = await this.settings.get(input.organization_id);
    if (!organization.followups_enabled) throw new AppError(ErrorCode.Conflict, "the organization's plan does not include follow-ups", { reason: 'plan_lost' });
    if (organization.max_live_enrollments !== null && (await this.enrollments.countLive(tx, input.organization_id)) >= organization.max_live_enrollments) {
      throw new AppError(ErrorCode.Conflict, `the plan allows ${organization.max_live_enrollments} live enrollments`, { reason: 'plan_limit' });
    }
    const contact = await this.contacts.find(tx, input.organization_id, input.contact_id);
    if (contact?.opted_out_at) throw new AppError(ErrorCode.Conflict, 'the contact opted out', { reason: 'opted_out' });
    if (contact?.erased_at) throw new AppError(ErrorCode.Conflict, 'the contact was erased', { reason: 'contact_erased' });
    await this.contacts.ensure(tx, input.organization_id, input.contact_id);

    const version = await this.versions.get(tx, flow.published_version_id);
    const entry = entryOf(version, now);
    const row = await this.enrollments.insert(tx, {
      id: randomUUID(),
      organization_id: input.organization_id,
      flow_id: flow.id,
      version_id: version.id,
      contact_id: input.contact_id,
      conversation_id: input.conversation_id ?? null,
      agent_id: input.agent_id ?? null,
      appointment_id: input.appointment_id ?? null,
      operation_key: input.operation_key,
      status: entry.status,
      reason: null,
      node_id: entry.nodeId,
      step: 1,
      next_run_at: entry.nextRunAt,
      node_entered_at: now,
      variables: input.variables ?? {},
      anchor_at: input.anchor_at ? new Date(input.anchor_at) : null,
      sender_id: input.sender_id ?? null,
      repeat_counts: {},
      last_reply_text: null,
      // Messages and handoffs already recorded when the enrollment began are not replies to it.
      reply_seen_at: latest(now, contact?.last_inbound_at),
      handoff_seen_at: latest(now, contact?.handoff_at),
      pending_exit: null,
      cancel_on_reply: version.settings.trigger.cancel_on_reply,
      handoff_policy: version.settings.handoff_policy,
      last_send_status: null,
      inflight_effect_id: null,
      sender_unavailable_since: null,
      failures: 0,
      last_error: null,
      ai_attempts: 0,
      locked_until: null,
      ai_draft: null,
      revision: 1,
      created_at: now,
      updated_at: now,
      finished_at: null,
    });
    await this.enrollments.insertEvents(tx, [{ organization_id: row.organization_id, enrollment_id: row.id, type: 'enrolled', node_id: row.node_id, data: { version_id: version.id, operation_key: row.operation_key }, at: now }]);
    await tx.publish({
      event_id: `followups.enrollment.created:${row.id}`,
      type: FollowupsEvents.EnrollmentCreated,
      organization_id: row.organization_id,
      data: { enrollment_id: row.id, flow_id: row.flow_id, contact_id: row.contact_id, version_id: row.version_id },
    });
    return row;
  }

  /** The enrollment with its timeline and effects (seed 002). @throws AppError not_found */
  async get(input: FollowupEnrollmentRef): Promise<EnrollmentDetailView> {
    check(input).uuid('organization_id').uuid('enrollment_id').done();
    const db = poolOf(this.uow.dataSource);
    const row = await this.enrollments.find(db, input.organization_id, input.enrollment_id);
    if (!row) throw notFound('enrollment');
    const [events, effects] = await Promise.all([this.enrollments.events(db, row.id), this.enrollments.effects(db, row.id)]);
    return { enrollment: toEnrollmentView(row), events: events.map(toEventView), effects: effects.map(toEffectView) };
  }

  /** A keyset page, newest first. @throws AppError invalid_cursor, validation_failed */
  async list(input: EnrollmentListData): Promise<CursorPage<FollowupEnrollmentView>> {
    check(input).uuid('organization_id').uuid('flow_id', true).uuid('contact_id', true).oneOf('status', FOLLOWUP_ENROLLMENT_STATUSES, true).int('limit', 1, ENROLLMENT_LIST_MAX_LIMIT, true).string('cursor', 1, 1024, true).done();
    const filters = { flow_id: input.flow_id, contact_id: input.contact_id, status: input.status };
    const after = input.cursor ? decodeCursor(input.cursor, filters) : undefined;
    const limit = input.limit ?? ENROLLMENT_LIST_DEFAULT_LIMIT;
    const rows = await this.enrollments.page(poolOf(this.uow.dataSource), { organizationId: input.organization_id, flowId: input.flow_id, contactId: input.contact_id, status: input.status }, after && { createdAt: after.createdAt, id: after.id }, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { data: page.map(toEnrollmentView), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
  }

  /**
   * Operator control (seed 002 "control"): `pause`, `resume`, `cancel`, `advance_now` (the current
   * wait runs now).
   * @throws AppError not_found, revision_conflict, already_terminal, dispatch_busy (a send is in
   *   flight or uncertain), conflict (the action does not apply to the status), validation_failed
   */
  async control(input: EnrollmentControlData): Promise<FollowupEnrollmentView> {
    check(input)
      .uuid('organization_id')
      .uuid('enrollment_id')
      .int('expected_revision', 1, 2 ** 31 - 1)
      .oneOf('action', ENROLLMENT_CONTROL_ACTIONS)
      .string('reason', 1, 500, true)
      .done();
    const now = this.clock.now();
    const saved = await this.uow.run(async (tx) => {
      const row = await this.enrollments.find(tx, input.organization_id, input.enrollment_id, true);
      if (!row) throw notFound('enrollment');
      if (row.revision !== input.expected_revision) throw revisionConflict('enrollment', input.expected_revision, row.revision);
      if (FINISHED.has(row.status)) throw new AppError(ErrorCode.AlreadyTerminal, `the enrollment is already ${row.status}`);
      if (row.inflight_effect_id) throw new AppError(ErrorCode.DispatchBusy, 'a send of this enrollment is in flight or uncertain; try again once it settles', { effect_id: row.inflight_effect_id });
      const state: EnrollmentRow = { ...row };
      switch (input.action) {
        case 'pause':
          if (state.status === 'paused_manual') return row;
          state.status = 'paused_manual';
          state.reason = input.reason ?? 'paused_by_operator';
          break;
        case 'resume': {
          if (!PAUSED.has(state.status)) return row;
          const version = await this.versions.get(tx, state.version_id);
          const node = state.node_id ? version.graph.nodes.get(state.node_id) : undefined;
          state.status = node?.type === 'wait' && node.config.mode === 'reply' ? 'waiting_reply' : 'active';
          state.reason = null;
          state.next_run_at ??= now;
          // The handoff that paused it is over: the backstop must not pause it again for it.
          state.handoff_seen_at = now;
          state.sender_unavailable_since = null;
          break;
        }
        case 'cancel':
          state.status = 'cancelled';
          state.reason = input.reason ?? 'cancelled_by_operator';
          state.next_run_at = null;
          state.finished_at = now;
          await tx.publish({
            event_id: `followups.enrollment.finished:${state.id}`,
            type: FollowupsEvents.EnrollmentFinished,
            organization_id: state.organization_id,
            data: { enrollment_id: state.id, flow_id: state.flow_id, contact_id: state.contact_id, status: state.status, reason: state.reason },
          });
          this.metrics.finished.inc({ status: 'cancelled', reason: 'operator' });
          break;
        case 'advance_now':
          if (state.status !== 'active' && state.status !== 'waiting_reply') {
            throw new AppError(ErrorCode.Conflict, `a ${state.status} enrollment cannot advance; resume it first`, { status: state.status });
          }
          state.next_run_at = now;
          break;
      }
      await this.enrollments.insertEvents(tx, [{ organization_id: state.organization_id, enrollment_id: state.id, type: 'control', node_id: state.node_id, data: { action: input.action, reason: input.reason ?? null }, at: now }]);
      return this.enrollments.saveState(tx, state, now);
    });
    this.logger.info({ event: 'followups.enrollment_control', organization_id: input.organization_id, enrollment_id: input.enrollment_id, action: input.action }, 'enrollment control');
    if (saved.next_run_at && saved.next_run_at <= now && (saved.status === 'active' || saved.status === 'waiting_reply')) this.signal.wake();
    return toEnrollmentView(saved);
  }
}

/** Where a new enrollment starts: the trigger's successor; a wait starts its clock at once. */
function entryOf(version: CompiledVersion, now: Date): { nodeId: string; status: 'active' | 'waiting_reply'; nextRunAt: Date } {
  const first = version.graph.next.get(version.graph.triggerId)?.get('always');
  const node = first ? version.graph.nodes.get(first) : undefined;
  if (!first || !node) throw new AppError(ErrorCode.Internal, `version ${version.id} has no node after its trigger`);
  if (node.type === 'wait') {
    const ms = node.config.mode === 'fixed' ? node.config.duration_ms : node.config.timeout_ms;
    return { nodeId: first, status: node.config.mode === 'reply' ? 'waiting_reply' : 'active', nextRunAt: new Date(now.getTime() + ms) };
  }
  return { nodeId: first, status: 'active', nextRunAt: now };
}

const latest = (a: Date, b: Date | null | undefined): Date => (b && b > a ? b : a);

function variablesProblems(variables: unknown): string[] {
  if (variables === undefined) return [];
  if (typeof variables !== 'object' || variables === null || Array.isArray(variables)) return ['variables must be an object'];
  const entries = Object.entries(variables);
  if (entries.length > 50) return ['variables: at most 50'];
  return entries.filter(([k, v]) => !/^[A-Za-z0-9_]{1,64}$/.test(k) || !['string', 'number', 'boolean'].includes(typeof v) || codePointLength(String(v)) > 1000).map(([k]) => `variables.${k}: a name of letters, digits or _ with a string, number or boolean value`);
}
