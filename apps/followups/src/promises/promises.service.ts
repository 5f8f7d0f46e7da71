import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  AI_DEFAULT_OUTPUT_SCHEMAS,
  AiClient,
  type CursorPage,
  type FlowTemplateRef,
  MessagingCommands,
  MessagingRpc,
  type MessagingSendData,
  type NotificationCreateData,
  type NotificationView,
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
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock, insideServiceWindow, nextSendOpening } from '@touchpoint/time';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import type { FollowupsConfig } from '../followups.config.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { decodeCursor, encodeCursor } from '@touchpoint/database';
import { truncateText } from '@touchpoint/text';
import { poolOf } from '../requests/queryable.js';
import { check, notFound } from '../requests/request-checks.js';
import { AgentsRepository } from '../agents/agents.repository.js';
import { SendersRepository } from '../senders/senders.repository.js';
import { SettingsService } from '../settings/settings.service.js';
import { PROMISE_KEY_PREFIX, type PromiseRow, promiseSendKeyOf, toPromiseDetail, toPromiseView } from './promise-row.js';
import { PromisesRepository } from './promises.repository.js';

/** A template return with no usable number is retried this much later, ms (seed 000 "retry 15 s"). */
export const PROMISE_SENDER_RETRY_MS = 15_000;
/** A team alert messaging could not take is tried again this much later, ms. */
export const PROMISE_ALERT_RETRY_MS = 30_000;
/** Tries of a team alert before the return is marked failed. */
export const PROMISE_ALERT_MAX_ATTEMPTS = 5;
/** Statuses cancel leaves alone as already cancelled (idempotent) — every other fired one is terminal. */
const CANCELLABLE: readonly PromiseStatus[] = ['scheduled', 'template_pending'];

/** What one `fireOne` did. */
export type PromiseFireOutcome = 'idle' | 'resumed' | 'template' | 'alerted' | 'skipped' | 'cancelled' | 'failed' | 'dropped' | 'waiting';

/**
 * One-off returns (seed 002 "Retornos avulsos"): a single scheduled resumption of a contact by the
 * agent. At the due time inside the 24-hour window the conversation is resumed with a message
 * ai-gateway writes (`promise_resume`); outside it, `outside_window` decides — `alert` notifies the
 * team through messaging, `template` sends an approved template.
 *
 * The model is called with no lock held (seed 000 "AI step"): the claim takes a lease
 * (`locked_until`) and bumps `attempts`, commits, calls, then writes under the lock only if
 * `attempts` is unchanged — a worker that died mid-call leaves a lease that expires, and its late
 * answer is dropped.
 */
@Injectable()
export class PromisesService {
  private readonly ai: AiClient;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly promises: PromisesRepository,
    private readonly contacts: ContactsRepository,
    private readonly agents: AgentsRepository,
    private readonly senders: SendersRepository,
    private readonly settings: SettingsService,
    private readonly metrics: FollowupsMetrics,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.ai = new AiClient(rpc);
  }

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
    check(input)
      .uuid('organization_id')
      .oneOf('status', PROMISE_STATUSES, true)
      .uuid('contact_id', true)
      .string('q', 1, 100, true)
      .string('cursor', 1, 1024, true)
      .int('limit', 1, PROMISE_LIST_MAX_LIMIT, true)
      .done();
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
    check(input)
      .uuid('organization_id')
      .uuid('promise_id')
      .uuid('api_key_id')
      .uuid('member_id')
      .oneOf('outcome', ['sent', 'rejected'])
      .string('note', RESOLUTION_NOTE_MIN, RESOLUTION_NOTE_MAX)
      .string('wamid', 1, 200, true)
      .done();
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

  /**
   * Fires at most one due return. Inside the 24-hour window: lease + fence, model call without a
   * lock, then the message (or `skipped` when the model failed). Outside: `alert` or `template`.
   */
  async fireOne(): Promise<PromiseFireOutcome> {
    const now = this.clock.now();
    const claimed = await this.uow.run(async (tx): Promise<{ outcome: PromiseFireOutcome; resume?: PromiseRow }> => {
      const row = await this.promises.claimDue(tx, now);
      if (!row) return { outcome: 'idle' };
      // The organization lost the follow-ups entitlement since the return was scheduled: it is not
      // sent (reason `plan_lost`, like the release loop's enrollments). Read on this transaction's
      // connection (see SettingsService.get).
      const organization = await this.settings.get(row.organization_id, tx);
      if (!organization.followups_enabled) {
        await this.promises.update(tx, row.id, { status: 'cancelled', cancel_reason: 'plan_lost', locked_until: null }, now);
        return { outcome: 'cancelled' };
      }
      const contact = await this.contacts.find(tx, row.organization_id, row.contact_id);
      if (contact?.erased_at || contact?.opted_out_at) {
        await this.promises.update(tx, row.id, { status: 'skipped', fired_at: row.fired_at ?? now, locked_until: null, run: { ai_run_id: null, message_key: null, skip_reason: contact.erased_at ? 'contact_erased' : 'opted_out', usage: null } }, now);
        return { outcome: 'skipped' };
      }
      const inside = insideServiceWindow(contact?.last_inbound_at, now);
      if (row.status === 'turn_enqueued' || (row.status === 'scheduled' && inside)) {
        const leased = await this.promises.update(tx, row.id, { status: 'turn_enqueued', attempts: row.attempts + 1, locked_until: new Date(now.getTime() + this.config.FOLLOWUP_AI_LEASE_MS), fired_at: row.fired_at ?? now }, now);
        return { outcome: 'resumed', resume: leased! };
      }
      if (row.outside_window === 'alert') return { outcome: await this.alert(tx, row, now) };
      return { outcome: await this.sendTemplate(tx, row, now) };
    });
    if (!claimed.resume) {
      if (claimed.outcome !== 'idle') this.metrics.promises.inc({ outcome: claimed.outcome });
      return claimed.outcome;
    }
    const outcome = await this.resume(claimed.resume);
    this.metrics.promises.inc({ outcome });
    return outcome;
  }

  /** The model call (no lock held), then the fenced second pass. */
  private async resume(row: PromiseRow): Promise<PromiseFireOutcome> {
    const contact = await this.contacts.find(poolOf(this.uow.dataSource), row.organization_id, row.contact_id);
    const result = await this.ai.run({
      organization_id: row.organization_id,
      kind: 'promise_resume',
      // One key per attempt: a new fence asks the model again rather than reading a dead worker's answer.
      idempotency_key: `promise:${row.id}:${row.attempts}`,
      input: { promise: row.promise, reason: row.reason, promised_at: row.promised_at.toISOString(), ...(contact?.name ? { contact: { name: contact.name } } : {}) },
      output_schema: AI_DEFAULT_OUTPUT_SCHEMAS.promise_resume,
      timeout_ms: this.config.FOLLOWUP_AI_TIMEOUT_MS,
    });
    this.metrics.aiRequests.inc({ kind: 'promise_resume', status: result.status });
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const current = await this.promises.find(tx, row.organization_id, row.id, true);
      // Fenced: another worker took over (a new attempt), or the return was cancelled meanwhile.
      if (!current || current.attempts !== row.attempts || current.status !== 'turn_enqueued') {
        this.logger.info({ event: 'followups.promise_late_answer_dropped', promise_id: row.id, attempts: row.attempts }, 'late model answer dropped');
        return 'dropped' as const;
      }
      const fresh = await this.contacts.find(tx, row.organization_id, row.contact_id);
      const usage = (result.usage as unknown as Record<string, unknown>) ?? null;
      if (fresh?.opted_out_at || fresh?.erased_at) {
        await this.promises.update(tx, row.id, { status: 'skipped', locked_until: null, run: { ai_run_id: result.run_id, message_key: null, skip_reason: 'opted_out', usage } }, now);
        return 'skipped' as const;
      }
      const body = result.status === 'ok' ? String((result.output as { body?: unknown })?.body ?? '').trim() : '';
      if (!body) {
        await this.promises.update(tx, row.id, { status: 'skipped', locked_until: null, last_error: result.reason ?? null, run: { ai_run_id: result.run_id, message_key: null, skip_reason: `ai_${result.status === 'ok' ? 'empty' : result.status}`, usage } }, now);
        return 'skipped' as const;
      }
      const key = promiseSendKeyOf(row.id);
      const sender = await this.senders.connectedFallback(tx, row.organization_id, 'whatsapp');
      await tx.publish([this.sendCommand(row, key, { text: body }, sender?.sender_id)]);
      await this.promises.update(tx, row.id, { status: 'completed', locked_until: null, run: { ai_run_id: result.run_id, message_key: key, skip_reason: null, usage } }, now);
      return 'resumed' as const;
    });
  }

  /** Outside the window with `alert`: the team is notified through messaging (idempotent by key). */
  private async alert(tx: Tx, row: PromiseRow, now: Date): Promise<PromiseFireOutcome> {
    const notification: NotificationCreateData = {
      organization_id: row.organization_id,
      contact_id: row.contact_id,
      title: 'Retorno fora da janela de 24 horas',
      body: `${row.promise} — ${row.reason}`,
      channels: ['in_app'],
      priority: 'high',
      idempotency_key: `promise-alert:${row.id}`,
      data: { kind: 'followup_promise_due', promise_id: row.id, conversation_id: row.conversation_id ?? '' },
    };
    let view: NotificationView | { data: NotificationView };
    try {
      view = await this.rpc.call<NotificationView | { data: NotificationView }>('messaging', MessagingRpc.NotificationCreate, notification, this.config.FOLLOWUP_ACTION_RPC_TIMEOUT_MS);
    } catch (err) {
      // Messaging down or refusing: try again later (the key makes a repeat one notification), fail after a few tries.
      const attempts = row.attempts + 1;
      const message = err instanceof Error ? err.message : String(err);
      if (attempts >= PROMISE_ALERT_MAX_ATTEMPTS) {
        await this.promises.update(tx, row.id, { status: 'failed', attempts, fired_at: row.fired_at ?? now, last_error: truncateText(`alert: ${message}`, 1000) }, now);
        return 'failed';
      }
      await this.promises.update(tx, row.id, { attempts, due_at: new Date(now.getTime() + PROMISE_ALERT_RETRY_MS), last_error: truncateText(`alert: ${message}`, 1000) }, now);
      return 'waiting';
    }
    const notificationId = 'id' in view ? view.id : (view.data?.id ?? null);
    await this.promises.update(tx, row.id, { status: 'alerted', fired_at: row.fired_at ?? now, alert: { notification_id: notificationId, notified_at: now.toISOString() } }, now);
    return 'alerted';
  }

  /** Outside the window with `template`: an approved template through messaging's send path. */
  private async sendTemplate(tx: Tx, row: PromiseRow, now: Date): Promise<PromiseFireOutcome> {
    const organization = await this.settings.get(row.organization_id);
    const approved = organization.approved_templates[0];
    const template: FlowTemplateRef | null = row.template ?? (approved ? { name: approved.name, language: approved.language, parameters: [] } : null);
    if (!template) {
      await this.promises.update(tx, row.id, { status: 'failed', fired_at: row.fired_at ?? now, last_error: 'no_approved_template' }, now);
      return 'failed';
    }
    const sender = await this.senders.connectedFallback(tx, row.organization_id, 'whatsapp');
    if (!sender) {
      await this.promises.update(tx, row.id, { status: 'template_pending', fired_at: row.fired_at ?? now, due_at: new Date(now.getTime() + PROMISE_SENDER_RETRY_MS), last_error: 'sender_unavailable' }, now);
      return 'waiting';
    }
    const key = promiseSendKeyOf(row.id);
    const parameters = template.parameters ?? [];
    await tx.publish([
      this.sendCommand(row, key, { template: { name: template.name, language: template.language, components: parameters.length ? [{ type: 'body', parameters: parameters.map((t) => ({ type: 'text', text: t })) }] : [] } }, sender.sender_id),
    ]);
    await this.promises.update(tx, row.id, { status: 'template_dispatching', fired_at: row.fired_at ?? now, last_error: null, run: { ai_run_id: null, message_key: key, skip_reason: null, usage: null } }, now);
    return 'template';
  }

  private sendCommand(row: PromiseRow, key: string, content: Pick<MessagingSendData, 'text' | 'template'>, senderId: string | undefined) {
    const command: MessagingSendData = {
      organization_id: row.organization_id,
      idempotency_key: key,
      channel: 'whatsapp',
      contact_id: row.contact_id,
      ...(row.conversation_id ? { conversation_id: row.conversation_id } : {}),
      sender_type: 'followup',
      ...(row.agent_id ? { sender_id: row.agent_id } : {}),
      ...(senderId ? { outbox_sender_id: senderId } : {}),
      requester: 'followups',
      ...content,
      context: { followup_promise_id: row.id },
    };
    return { event_id: key, type: MessagingCommands.Send, organization_id: row.organization_id, data: command as unknown as Record<string, unknown> };
  }
}

function templateProblems(template: unknown): string[] {
  if (template === undefined || template === null) return [];
  const t = template as Record<string, unknown>;
  if (typeof t !== 'object' || typeof t.name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(t.name) || typeof t.language !== 'string') return ['template must be {name, language, parameters?} of an approved template'];
  if (t.parameters !== undefined && !(Array.isArray(t.parameters) && t.parameters.every((p) => typeof p === 'string'))) return ['template.parameters must be strings'];
  return [];
}
