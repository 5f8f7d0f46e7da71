import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  type CursorPage,
  PROMISE_LIST_DEFAULT_LIMIT,
  PROMISE_LIST_MAX_LIMIT,
  PROMISE_OUTSIDE_WINDOW,
  PROMISE_STATUSES,
  type PromiseCancelData,
  type PromiseCreateData,
  type PromiseDetailView,
  type PromiseListData,
  type PromiseRef,
  type PromiseResolveData,
  type PromiseStatus,
  type PromiseView,
  RESOLUTION_NOTE_MAX,
  RESOLUTION_NOTE_MIN,
} from '@touchpoint/contracts';
import { notFound, poolOf, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { UnitOfWork } from '@touchpoint/runtime';
import { Clock, nextSendOpening } from '@touchpoint/time';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { decodeCursor, encodeCursor } from '@touchpoint/database';
import {} from '@touchpoint/text';
import { check } from '../input-checks/input-checks.js';
import { AgentsRepository } from '../agents/agents.repository.js';
import { SettingsService } from '../settings/settings.service.js';
import { PROMISE_KEY_PREFIX, type PromiseRow, toPromiseDetail, toPromiseView } from './promise-row.js';
import { PromisesRepository } from './promises.repository.js';

/** Statuses cancel leaves alone as already cancelled (idempotent) — every other fired one is terminal. */
const CANCELLABLE: readonly PromiseStatus[] = ['scheduled', 'template_pending'];

/**
 * One-off returns (seed 002 "Retornos avulsos"): a single scheduled resumption of a contact by the
 * agent. Scheduled, listed, cancelled and resolved here, where the send outcomes of their messages
 * are applied too; `PromiseFiringService` fires them when due.
 */
@Injectable()
export class PromisesService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly promises: PromisesRepository,
    private readonly contacts: ContactsRepository,
    private readonly agents: AgentsRepository,
    private readonly settings: SettingsService,
    private readonly metrics: FollowupsMetrics,
    private readonly clock: Clock,
  ) {}

  /**
   * Schedules a return. `due_at` is the effective time: the promised time, not before now, moved
   * into the organization's send window.
   * @returns the return and whether this call created it (a repeated operation_key returns the first)
   * @throws AppError validation_failed; idempotency_conflict (the key was used for another contact);
   *   conflict with `reason: plan_lost` when the organization's plan does not include follow-ups
   *   (the entitlement, as for enrollments); already_pending when the contact has a pending return (seed 002)
   */
  async create(input: PromiseCreateData): Promise<{ promise: PromiseView; created: boolean }> {
    check(input)
      .uuid('organization_id')
      .uuid('contact_id')
      .uuid('conversation_id', true)
      .uuid('agent_id', true)
      .string('operation_key', 1, 200)
      .string('reason', 1, 500)
      .string('promise', 1, 1000)
      .oneOf('outside_window', PROMISE_OUTSIDE_WINDOW)
      .custom('promised_at', typeof input.promised_at === 'string' && !Number.isNaN(Date.parse(input.promised_at)) ? [] : ['promised_at must be an ISO-8601 instant'])
      .custom('template', templateProblems(input.template))
      .done();
    const db = poolOf(this.uow.dataSource);
    const existing = await this.promises.findByOperationKey(db, input.organization_id, input.operation_key);
    if (existing) return this.repeated(existing, input);
    const now = this.clock.now();
    const organization = await this.settings.get(input.organization_id);
    if (!organization.followups_enabled) {
      this.metrics.promises.inc({ outcome: 'plan_lost' });
      throw new AppError(ErrorCode.Conflict, "the organization's plan does not include follow-ups", { reason: 'plan_lost' });
    }
    const promisedAt = new Date(input.promised_at);
    const w = organization.send_window;
    const dueAt = nextSendOpening(promisedAt > now ? promisedAt : now, { startHour: w.start_hour, endHour: w.end_hour, days: w.days, timezone: w.timezone });
    try {
      const row = await this.uow.run((tx) =>
        this.promises.insert(tx, {
          id: randomUUID(),
          organization_id: input.organization_id,
          contact_id: input.contact_id,
          conversation_id: input.conversation_id ?? null,
          agent_id: input.agent_id ?? null,
          operation_key: input.operation_key,
          reason: input.reason,
          promise: input.promise,
          promised_at: promisedAt,
          due_at: dueAt,
          outside_window: input.outside_window,
          template: input.template ?? null,
          status: 'scheduled',
          created_at: now,
        }),
      );
      this.metrics.promises.inc({ outcome: 'scheduled' });
      return { promise: toPromiseView(row), created: true };
    } catch (err) {
      const constraint = (err as { constraint?: string }).constraint;
      if (constraint === 'promises_operation_key') {
        const winner = await this.promises.findByOperationKey(db, input.organization_id, input.operation_key);
        if (winner) return this.repeated(winner, input);
      }
      if (constraint === 'promises_one_pending_idx') {
        this.metrics.promises.inc({ outcome: 'already_pending' });
        throw new AppError(ErrorCode.AlreadyPending, 'the contact already has a pending return');
      }
      throw err;
    }
  }

  private repeated(existing: PromiseRow, input: PromiseCreateData): { promise: PromiseView; created: boolean } {
    if (existing.contact_id !== input.contact_id) throw new AppError(ErrorCode.IdempotencyConflict, 'this operation_key was used for another contact', { promise_id: existing.id });
    return { promise: toPromiseView(existing), created: false };
  }

  /** Newest first, cursor-paged (seed 002: limit 1–100, default 30). @throws AppError invalid_cursor, validation_failed */
  async list(input: PromiseListData): Promise<CursorPage<PromiseView>> {
    check(input).uuid('organization_id').oneOf('status', PROMISE_STATUSES, true).uuid('contact_id', true).string('q', 1, 100, true).string('cursor', 1, 1024, true).int('limit', 1, PROMISE_LIST_MAX_LIMIT, true).done();
    const filters = { status: input.status, q: input.q, contact_id: input.contact_id };
    const after = input.cursor ? decodeCursor(input.cursor, filters) : undefined;
    const limit = input.limit ?? PROMISE_LIST_DEFAULT_LIMIT;
    const rows = await this.promises.page(poolOf(this.uow.dataSource), { organizationId: input.organization_id, status: input.status, contactId: input.contact_id, q: input.q?.trim() || undefined }, after, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { data: page.map(toPromiseView), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
  }

  /** @throws AppError not_found */
  async get(input: PromiseRef): Promise<PromiseDetailView> {
    check(input).uuid('organization_id').uuid('promise_id').done();
    const db = poolOf(this.uow.dataSource);
    const row = await this.promises.find(db, input.organization_id, input.promise_id);
    if (!row) throw notFound('promise');
    const [contact, agent] = await Promise.all([this.contacts.find(db, input.organization_id, row.contact_id), row.agent_id ? this.agents.find(db, input.organization_id, row.agent_id) : undefined]);
    return toPromiseDetail(row, contact, agent?.name ?? null);
  }

  /**
   * Cancels a return that has not fired. Repeating it answers the cancelled return.
   * @throws AppError not_found; already_terminal when it already fired (seed 002)
   */
  async cancel(input: PromiseCancelData): Promise<PromiseView> {
    check(input).uuid('organization_id').uuid('promise_id').string('reason', 1, 500, true).done();
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const row = await this.promises.find(tx, input.organization_id, input.promise_id, true);
      if (!row) throw notFound('promise');
      if (row.status === 'cancelled') return toPromiseView(row);
      if (!CANCELLABLE.includes(row.status)) throw new AppError(ErrorCode.AlreadyTerminal, `the return already fired (${row.status})`, { status: row.status });
      const updated = await this.promises.update(tx, row.id, { status: 'cancelled', cancel_reason: input.reason ?? null, locked_until: null }, now);
      this.metrics.promises.inc({ outcome: 'cancelled' });
      return toPromiseView(updated!);
    });
  }

  /**
   * Reconciles the template send of a return left `unknown` (seed 002): `sent` → completed,
   * `rejected` → failed, with the evidence.
   * @throws AppError validation_failed; not_found; not_ambiguous when the return is not unknown
   */
  async resolve(input: PromiseResolveData): Promise<{ resolved: true }> {
    check(input).uuid('organization_id').uuid('promise_id').uuid('api_key_id').uuid('member_id').oneOf('outcome', ['sent', 'rejected']).string('note', RESOLUTION_NOTE_MIN, RESOLUTION_NOTE_MAX).string('wamid', 1, 200, true).done();
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const row = await this.promises.find(tx, input.organization_id, input.promise_id, true);
      if (!row) throw notFound('promise');
      if (row.status !== 'unknown') throw new AppError(ErrorCode.NotAmbiguous, `the return is ${row.status}; only an unknown send is reconciled`, { status: row.status });
      const resolution = { outcome: input.outcome, note: input.note, wamid: input.wamid ?? null, api_key_id: input.api_key_id, member_id: input.member_id, at: now.toISOString() };
      await this.promises.update(tx, row.id, { status: input.outcome === 'sent' ? 'completed' : 'failed', resolution }, now);
    });
    return { resolved: true };
  }

  /**
   * Applies a send outcome reported for a return's key (`promise:<id>`): sent → completed,
   * failed/cancelled → failed, ambiguous → unknown (until resolved). A late or repeated report
   * changes nothing.
   * @returns whether the key was a return's
   */
  async applySendOutcome(tx: Tx, organizationId: string, key: string, outcome: 'sent' | 'failed' | 'cancelled' | 'uncertain', errorCode: string | null, at: Date): Promise<boolean> {
    if (!key.startsWith(PROMISE_KEY_PREFIX)) return false;
    const id = key.slice(PROMISE_KEY_PREFIX.length);
    if (!/^[0-9a-f-]{36}$/i.test(id)) return true;
    if (outcome === 'sent') await this.promises.settleSend(tx, organizationId, id, 'completed', ['template_dispatching', 'unknown'], null, at);
    else if (outcome === 'uncertain') await this.promises.settleSend(tx, organizationId, id, 'unknown', ['template_dispatching'], null, at);
    else await this.promises.settleSend(tx, organizationId, id, 'failed', ['template_dispatching', 'unknown', 'completed'], errorCode ?? `send_${outcome}`, at);
    return true;
  }
}

function templateProblems(template: unknown): string[] {
  if (template === undefined || template === null) return [];
  const t = template as Record<string, unknown>;
  if (typeof t !== 'object' || typeof t.name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(t.name) || typeof t.language !== 'string') return ['template must be {name, language, parameters?} of an approved template'];
  if (t.parameters !== undefined && !(Array.isArray(t.parameters) && t.parameters.every((p) => typeof p === 'string'))) return ['template.parameters must be strings'];
  return [];
}
