import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DateTime } from 'luxon';
import {
  AI_DEFAULT_OUTPUT_SCHEMAS,
  AiClient,
  type AiInputByKind,
  type AiRunResult,
  type ApprovalCheckData,
  type ApprovalCheckView,
  FollowupsEvents,
  GatewayApprovalRpc,
  type FollowupSettingsView,
  type FlowStatus,
  type FlowTemplateRef,
  MessagingCommands,
  MessagingRpc,
  type MessagingSendData,
  type OutgoingMessage,
} from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock, insideServiceWindow, nextSendOpening } from '@touchpoint/time';
import { type ContactActivity, ContactsRepository } from '../contacts/contacts.repository.js';
import { type EnrollmentRow, type NewEnrollmentEvent, sendKeyOf } from '../enrollments/enrollment-row.js';
import { type CompiledVersion, FlowVersionCache } from '../flows/flow-version-cache.js';
import type { FollowupsConfig } from '../followups.config.js';
import { type ActionConfig, type AiClassifyConfig, type ExitKey, isSendAction, type ParsedNode } from '../graph/node-config.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { SendersRepository } from '../senders/senders.repository.js';
import { SettingsService } from '../settings/settings.service.js';
import { anchorSkipReason } from './gates/anchor-grace.js';
import { recipientSendWindow } from './gates/recipient-window.js';
import { InFlightWindow } from './in-flight-window.js';
import { INSTANCE_UNAVAILABLE, NumberChain } from './number-chain.js';
import { evaluateCondition, failureBackoffMs, matchReply, renderTemplate, type StepFacts } from './step-rules.js';
import { type ClaimedRow, type NewEffect, ReleaseRepository, type StepSendEffect, type StepWrite } from './release.repository.js';

/** A busy contact is retried this much later, ms (seed 000 "busy → retry in 2 s"). */
export const CONTACT_BUSY_RETRY_MS = 2000;
/** An unusable sending number is retried this much later, ms (seed 000 "retry 15 s"). */
export const SENDER_RETRY_MS = 15_000;
/** After this long without a usable number the enrollment is parked, ms (seed 000 "pause after 30 min"). */
export const SENDER_PARK_AFTER_MS = 30 * 60_000;
/** A send over the monthly quota waits this long, ms (seed 000 "Quota used up: deferred 30 min at a time"). */
export const QUOTA_RETRY_MS = 30 * 60_000;
/** How long an AI-written send's answer stays usable while the send waits, ms (then the model is asked again). */
export const AI_DRAFT_TTL_MS = 60 * 60_000;
/** Node transitions one release may chain (instant nodes); more means a bug, not a flow. */
const MAX_TRANSITIONS = 64;

/** What the steps of one release transaction write at its end: their rows, then their bus messages. */
interface PendingWrites {
  writes: StepWrite[];
  messages: OutgoingMessage[];
}

/** The error of a step whose effects were already recorded: another release got there first. */
function alreadyReleased(write: StepWrite): Error {
  const effect = write.effects[0];
  return new Error(`step ${effect?.nodeId}#${effect?.step} of enrollment ${write.state.id} was already released`);
}

/** What one call of `releaseOne` did (`dropped`: an AI step's answer came after its fence moved on). */
export type ReleaseOutcome = 'idle' | 'released' | 'busy' | 'failed' | 'dropped';

/** AI kinds a step asks ai-gateway for. */
type StepAiKind = 'followup_classify' | 'followup_message';

/** A model call the first pass of an AI step leaves for after its commit (seed 000 "AI step"). */
interface AiRequest {
  enrollmentId: string;
  organizationId: string;
  nodeId: string;
  step: number;
  /** The fence: `ai_attempts` as the first pass wrote it. */
  attempts: number;
  kind: StepAiKind;
  input: AiInputByKind[StepAiKind];
}

/** The second pass of an AI step: the fence to claim under, and the model's answer. */
interface AiAnswer {
  request: AiRequest;
  result: AiRunResult;
}

/** The working state of one release: the row being changed, and what to write with it. */
interface ReleaseContext {
  tx: Tx;
  now: Date;
  state: EnrollmentRow;
  contact: ContactActivity;
  version: CompiledVersion;
  organization: FollowupSettingsView;
  events: NewEnrollmentEvent[];
  messages: OutgoingMessage[];
  /** Effects of this step, written with it. */
  effects: NewEffect[];
  /** The contact's follow-up sends of the last 24 h, as of the claim (per-contact cap). */
  recentSends: { count: number; oldest: Date | null };
  /** A send was queued in this transaction: the next one waits for its own (seed 000: one step per transaction). */
  sent: boolean;
  /** Second pass of an AI step: the model's answer for (node, visit). */
  ai?: AiAnswer;
  /** First pass of an AI step: the call to make once this transaction commits. */
  aiRequest?: AiRequest;
}

/**
 * The release loop's unit of work (seed 000 "Release (one step, one transaction)", adapted to the
 * graph): claim the oldest due enrollment, take its contact without waiting, run the checks, then
 * run nodes until the enrollment waits, finishes, is deferred, or has queued one send — all in one
 * transaction, so a crash at any line leaves the enrollment exactly as it was.
 */
@Injectable()
export class ReleaseService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly release: ReleaseRepository,
    private readonly contacts: ContactsRepository,
    private readonly senders: SendersRepository,
    private readonly numbers: NumberChain,
    private readonly inFlight: InFlightWindow,
    private readonly versions: FlowVersionCache,
    private readonly settings: SettingsService,
    private readonly metrics: FollowupsMetrics,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.ai = new AiClient(rpc);
  }

  private readonly ai: AiClient;

  /**
   * Releases at most one due step. An AI step takes two transactions around its model call (seed
   * 000 "AI step"): the first pass leases the enrollment (`locked_until`, `next_run_at` moved
   * there) and bumps `ai_attempts`, then commits; the model is called with no lock held; the
   * second pass claims the same enrollment only while `ai_attempts`, node and visit are unchanged,
   * re-runs every check under the lock and uses the answer. A worker that died mid-call leaves a
   * lease that expires: another release runs the step with a new fence, and a late answer finds
   * the fence moved and is dropped.
   */
  async releaseOne(): Promise<ReleaseOutcome> {
    const first = await this.pass();
    if (!first.aiRequest) return first.outcome;
    return this.answerAi(first.aiRequest);
  }

  /**
   * Releases up to `limit` due steps of different enrollments in one transaction (group commit):
   * one claim statement, then each claimed enrollment runs exactly as in `releaseOne` — its checks,
   * its nodes, one write of its step — and one outbox insert and one commit serve them all. Each
   * enrollment still moves at most one step per transaction (seed 000 "Release (one step, one
   * transaction)"), and a step is written whole or not at all: if one enrollment's step throws,
   * the whole batch rolls back, that enrollment alone records the failure and backs off, and the
   * others stay due for the next claim. An error that belongs to no single step (the outbox insert,
   * the commit) is thrown: the caller releases one at a time for a while (see ReleaseLoop).
   * AI steps leave their model calls for after the commit, as in `releaseOne`.
   * @returns how many enrollments were claimed (0: nothing is due)
   */
  async releaseBatch(limit: number): Promise<number> {
    const now = this.clock.now();
    let current: { id: string; revision: number; organization_id: string } | undefined;
    const outcomes: ReleaseOutcome[] = [];
    const aiRequests: AiRequest[] = [];
    let claimedCount = 0;
    try {
      await this.uow.run(async (tx) => {
        const rows = await this.release.claimDueBatch(tx, now, limit);
        claimedCount = rows.length;
        const pending: PendingWrites = { writes: [], messages: [] };
        // Sends queued earlier in this batch count against the per-contact cap of the later rows.
        const batchSends = new Map<string, number>();
        // Rows of one contact share one contact object, so a tag step's change is what a later
        // row of that contact checks its consent against.
        const contacts = new Map<string, ContactActivity>();
        for (const row of rows) {
          current = { id: row.id, revision: row.revision, organization_id: row.organization_id };
          const earlier = batchSends.get(row.contact_id) ?? 0;
          const recentSends = earlier ? { count: row.recentSends.count + earlier, oldest: row.recentSends.oldest ?? now } : row.recentSends;
          const contactKey = `${row.organization_id}:${row.contact_id}`;
          let contact = row.contact;
          if (contact) {
            contact = contacts.get(contactKey) ?? contact;
            contacts.set(contactKey, contact);
          }
          const result = await this.releaseClaimed(tx, now, { ...row, contact, recentSends }, pending);
          if (result.sent) batchSends.set(row.contact_id, earlier + 1);
          if (result.aiRequest) aiRequests.push(result.aiRequest);
          outcomes.push(result.outcome);
        }
        // One write for every step, then one outbox insert: a failure here is the batch's, not a row's.
        current = undefined;
        const again = await this.writePending(tx, pending, now);
        if (again) {
          const row = rows.find((r) => r.id === again.state.id)!;
          current = { id: row.id, revision: row.revision, organization_id: row.organization_id };
          throw alreadyReleased(again);
        }
      });
    } catch (err) {
      if (!current) throw err;
      this.metrics.releases.inc({ outcome: 'failed' });
      await this.recordFailure(current, err, now);
      return claimedCount;
    }
    for (const outcome of outcomes) this.metrics.releases.inc({ outcome });
    await Promise.all(aiRequests.map((request) => this.answerAi(request)));
    return claimedCount;
  }

  /** The model call of an AI step's first pass, made with no lock held, then the fenced second pass. */
  private async answerAi(request: AiRequest): Promise<ReleaseOutcome> {
    const result = await this.ai.run({
      organization_id: request.organizationId,
      kind: request.kind,
      // One key per attempt: a new fence asks again instead of reading a dead worker's stored answer.
      idempotency_key: `followup:${request.enrollmentId}:${request.nodeId}:${request.step}:${request.attempts}`,
      input: request.input,
      output_schema: AI_DEFAULT_OUTPUT_SCHEMAS[request.kind],
      timeout_ms: this.config.FOLLOWUP_AI_TIMEOUT_MS,
    });
    this.metrics.aiRequests.inc({ kind: request.kind, status: result.status });
    const second = await this.pass({ request, result });
    return second.outcome;
  }

  /**
   * Releases at most one due step. An unexpected error rolls the transaction back and backs the
   * enrollment off (30 s … 1 h), marking it `dead` after FOLLOWUP_MAX_FAILURES.
   */
  private async pass(answer?: AiAnswer): Promise<{ outcome: ReleaseOutcome; aiRequest?: AiRequest }> {
    const now = this.clock.now();
    let claimed: { id: string; revision: number; organization_id: string } | undefined;
    let aiRequest: AiRequest | undefined;
    try {
      const outcome = await this.uow.run(async (tx) => {
        const fence = answer && { id: answer.request.enrollmentId, aiAttempts: answer.request.attempts, nodeId: answer.request.nodeId, step: answer.request.step };
        const claimedRow = await this.release.claimDue(tx, now, fence);
        if (!claimedRow && answer) {
          // Another release took the step over with a new fence (our lease ran out), or it moved on.
          this.metrics.aiRequests.inc({ kind: answer.request.kind, status: 'late_dropped' });
          this.logger.info({ event: 'followups.ai_late_answer_dropped', enrollment_id: answer.request.enrollmentId, node_id: answer.request.nodeId, attempts: answer.request.attempts }, 'late AI answer dropped');
          return 'dropped' as const;
        }
        if (!claimedRow) return 'idle' as const;
        claimed = { id: claimedRow.id, revision: claimedRow.revision, organization_id: claimedRow.organization_id };
        const pending: PendingWrites = { writes: [], messages: [] };
        const result = await this.releaseClaimed(tx, now, claimedRow, pending, answer);
        const again = await this.writePending(tx, pending, now);
        if (again) throw alreadyReleased(again);
        aiRequest = result.aiRequest;
        return result.outcome;
      });
      this.metrics.releases.inc({ outcome });
      return { outcome, aiRequest };
    } catch (err) {
      this.metrics.releases.inc({ outcome: 'failed' });
      if (!claimed) throw err;
      await this.recordFailure(claimed, err, now);
      return { outcome: 'failed' };
    }
  }

  /**
   * One claimed enrollment inside the release transaction: a busy contact or a flow row being
   * changed defers it 2 s; otherwise its step runs. What the step writes and publishes goes to
   * `pending`, for the caller to write once per transaction (`writePending`).
   */
  private async releaseClaimed(tx: Tx, now: Date, claimedRow: ClaimedRow, pending: PendingWrites, answer?: AiAnswer): Promise<{ outcome: 'released' | 'busy'; sent: boolean; aiRequest?: AiRequest }> {
    const { contact, recentSends, ...row } = claimedRow;
    this.metrics.releaseLag.observe(Math.max(0, (now.getTime() - (row.next_run_at?.getTime() ?? now.getTime())) / 1000));
    if (!contact) {
      // A stop path holds the contact (or the row is missing): never wait, come back in 2 s.
      await this.contacts.ensure(tx, row.organization_id, row.contact_id);
      await this.release.deferOnly(tx, row.id, new Date(now.getTime() + CONTACT_BUSY_RETRY_MS));
      return { outcome: 'busy', sent: false };
    }
    let { flow_status: flowStatus, ...state } = row;
    if (flowStatus !== 'active') {
      const locked = await this.release.lockFlowStatus(tx, row.flow_id);
      if (!locked) {
        await this.release.deferOnly(tx, row.id, new Date(now.getTime() + CONTACT_BUSY_RETRY_MS));
        return { outcome: 'busy', sent: false };
      }
      flowStatus = locked;
    }
    const stepped = await this.step(tx, now, state, contact, flowStatus, recentSends, pending, answer);
    return { outcome: 'released', sent: stepped.sent, aiRequest: stepped.aiRequest };
  }

  /**
   * Writes the pending steps (one statement) and inserts their messages into the outbox.
   * @returns a step whose effects were already recorded (released before: the caller throws), or undefined
   */
  private async writePending(tx: Tx, pending: PendingWrites, now: Date): Promise<StepWrite | undefined> {
    if (pending.writes.length) {
      const inserted = await this.release.writeSteps(tx, pending.writes, now);
      // Unique per (enrollment, node, visit, kind): fewer rows means this step was already released.
      const again = pending.writes.find((w) => (inserted.get(w.state.id) ?? 0) < w.effects.length);
      if (again) return again;
    }
    if (pending.messages.length) await tx.publish(pending.messages);
    return undefined;
  }

  private async recordFailure(claimed: { id: string; revision: number; organization_id: string }, err: unknown, now: Date): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    const result = await this.uow.run((tx) => this.release.recordFailure(tx, claimed.id, claimed.revision, message, failureBackoffMs, this.config.FOLLOWUP_MAX_FAILURES, now));
    this.logger.warn(
      { event: 'followups.release_failed', organization_id: claimed.organization_id, enrollment_id: claimed.id, err: message, failures: result?.failures, status: result?.status },
      'release failed; backing off',
    );
    if (result?.status === 'dead') this.metrics.finished.inc({ status: 'dead', reason: 'too_many_failures' });
  }

  /** Checks, then nodes; the enrollment's new state, its timeline, effects and messages go to `pending`. */
  private async step(
    tx: Tx,
    now: Date,
    state: EnrollmentRow,
    contact: ContactActivity,
    flowStatus: FlowStatus,
    recentSends: ReleaseContext['recentSends'],
    pending: PendingWrites,
    ai?: AiAnswer,
  ): Promise<{ sent: boolean; aiRequest?: AiRequest }> {
    const version = await this.versions.get(tx, state.version_id);
    const organization = await this.settings.get(state.organization_id, tx);
    const ctx: ReleaseContext = { tx, now, state: { ...state, failures: 0, last_error: null, locked_until: null }, contact, version, organization, events: [], messages: [], effects: [], sent: false, recentSends, ai };
    if (this.checks(ctx, flowStatus)) await this.runNodes(ctx);
    pending.writes.push({ state: ctx.state, events: ctx.events, effects: ctx.effects });
    pending.messages.push(...ctx.messages);
    return { sent: ctx.sent, aiRequest: ctx.aiRequest };
  }

  /**
   * The checks of seed 000 "Release": flow paused → park; plan lost (the organization's follow-ups
   * entitlement off), archived, erased, opted out → stop; a
   * reply the stop path has not applied yet (backstop) → the `replied` exit, or stop; a human
   * message (backstop) → per `handoff_policy`.
   * @returns whether the enrollment may go on
   */
  private checks(ctx: ReleaseContext, flowStatus: FlowStatus): boolean {
    const { state, contact } = ctx;
    if (flowStatus === 'paused' || flowStatus === 'draft') {
      this.park(ctx, 'flow_paused');
      return false;
    }
    if (!ctx.organization.followups_enabled) return this.finish(ctx, 'cancelled', 'plan_lost', 'check');
    if (flowStatus === 'archived') return this.finish(ctx, 'cancelled', 'flow_archived', 'check');
    if (contact.erased_at) return this.finish(ctx, 'cancelled', 'contact_erased', 'check');
    if (contact.opted_out_at) return this.finish(ctx, 'cancelled', 'opted_out', 'check');
    const seen = state.reply_seen_at ?? state.created_at;
    if (contact.last_inbound_at && contact.last_inbound_at > seen) {
      state.reply_seen_at = contact.last_inbound_at;
      state.last_reply_text = contact.last_inbound_text;
      if (state.status === 'waiting_reply') state.pending_exit = 'branch:replied';
      else if (state.cancel_on_reply) return this.finish(ctx, 'completed', 'replied', 'check');
    }
    const handoffSeen = state.handoff_seen_at ?? state.created_at;
    if (contact.handoff_at && contact.handoff_at > handoffSeen && state.handoff_policy !== 'continue') {
      state.handoff_seen_at = contact.handoff_at;
      if (state.handoff_policy === 'stop') return this.finish(ctx, 'cancelled', 'handoff', 'check');
      state.status = 'paused_handoff';
      state.reason = 'handoff';
      this.event(ctx, 'paused', { reason: 'handoff' });
      return false;
    }
    return true;
  }

  /** Runs the current node and every instant node after it. */
  private async runNodes(ctx: ReleaseContext): Promise<void> {
    const { state, version } = ctx;
    for (let transitions = 0; ; transitions++) {
      if (transitions > MAX_TRANSITIONS) throw new Error(`more than ${MAX_TRANSITIONS} node transitions in one release`);
      const node = state.node_id ? version.graph.nodes.get(state.node_id) : undefined;
      if (!node) throw new Error(`node ${state.node_id} is not in version ${version.id}`);
      const exit = await this.runNode(ctx, node);
      if (exit === undefined) return;
      const target = version.graph.next.get(node.id)?.get(exit);
      if (!target) throw new Error(`node ${node.id} has no edge for exit ${exit}`);
      if (!this.enter(ctx, target)) return;
    }
  }

  /**
   * Runs one node.
   * @returns the exit to take now, or undefined when the enrollment stops here for this release
   */
  private async runNode(ctx: ReleaseContext, node: ParsedNode & { id: string }): Promise<ExitKey | undefined> {
    const { state } = ctx;
    switch (node.type) {
      case 'trigger':
        return 'always';
      case 'wait': {
        const exit = state.pending_exit ?? (node.config.mode === 'fixed' ? 'always' : 'branch:timeout');
        state.pending_exit = null;
        this.countStep(ctx, { action: 'wait', outcome: exit === 'branch:replied' ? 'replied' : 'elapsed' });
        return exit;
      }
      case 'condition': {
        const result = evaluateCondition(node.config, this.facts(ctx));
        this.countStep(ctx, { action: 'condition', outcome: String(result) });
        this.event(ctx, 'condition_evaluated', { result });
        return `cond:${result}`;
      }
      case 'match_reply': {
        const branch = matchReply(node.config, state.last_reply_text);
        this.countStep(ctx, { action: 'match_reply', outcome: branch === 'default' ? 'default' : 'matched' });
        this.event(ctx, 'reply_matched', { branch_id: branch });
        return `branch:${branch}`;
      }
      case 'repeat': {
        const count = state.repeat_counts[node.id] ?? 0;
        const again = count < node.config.max_count;
        state.repeat_counts = { ...state.repeat_counts, [node.id]: again ? count + 1 : 0 };
        this.countStep(ctx, { action: 'repeat', outcome: again ? 'again' : 'done' });
        return again ? 'branch:again' : 'branch:done';
      }
      case 'end':
        this.finish(ctx, 'completed', node.config.outcome, 'end');
        return undefined;
      case 'ai_classify':
        return this.classify(ctx, node.id, node.config);
      case 'action':
        return this.runAction(ctx, node.id, node.config);
    }
  }

  private async runAction(ctx: ReleaseContext, nodeId: string, config: ActionConfig): Promise<ExitKey | undefined> {
    const { state, now, tx } = ctx;
    if (isSendAction(config)) {
      if (ctx.sent) {
        // One send per transaction: the next one is its own release (and paces on its own).
        state.next_run_at = now;
        return undefined;
      }
      const sent = await this.send(ctx, nodeId, config);
      return sent ? 'always' : undefined;
    }
    if (config.mode === 'tag' || config.mode === 'untag') {
      // Tags are idempotent, so calling messaging (their owner) before our commit is safe to repeat.
      const pattern = config.mode === 'tag' ? MessagingRpc.ContactTag : MessagingRpc.ContactUntag;
      await this.rpc.call('messaging', pattern, { organization_id: state.organization_id, contact_id: state.contact_id, tags: config.tags, source: 'followups' }, this.config.FOLLOWUP_ACTION_RPC_TIMEOUT_MS);
      const add = config.mode === 'tag' ? config.tags : [];
      const remove = config.mode === 'untag' ? config.tags : [];
      await this.contacts.applyTags(tx, state.organization_id, state.contact_id, add, remove);
      // What the rest of this release (and later rows of the contact in the batch) check consent against.
      ctx.contact.tags = [...new Set([...ctx.contact.tags, ...add])].filter((t) => !remove.includes(t));
      ctx.effects.push({ id: randomUUID(), organizationId: state.organization_id, enrollmentId: state.id, contactId: state.contact_id, nodeId, step: state.step, kind: 'action', status: 'done', reason: `${config.mode}:${config.tags.join(',')}` });
      this.countStep(ctx, { action: config.mode, outcome: 'done' });
      return 'always';
    }
    // Handoff: a person takes over; the enrollment waits paused after this node until resumed.
    const note = (config as Extract<ActionConfig, { mode: 'handoff' }>).note ?? null;
    ctx.effects.push({ id: randomUUID(), organizationId: state.organization_id, enrollmentId: state.id, contactId: state.contact_id, nodeId, step: state.step, kind: 'action', status: 'done', reason: 'handoff', text: note });
    ctx.messages.push({
      event_id: `followups.enrollment.handoff_requested:${state.id}:${nodeId}:${state.step}`,
      type: FollowupsEvents.HandoffRequested,
      organization_id: state.organization_id,
      data: { enrollment_id: state.id, contact_id: state.contact_id, conversation_id: state.conversation_id, node_id: nodeId, note },
    });
    this.countStep(ctx, { action: 'handoff', outcome: 'done' });
    const target = ctx.version.graph.next.get(nodeId)?.get('always');
    if (!target) throw new Error(`node ${nodeId} has no edge for exit always`);
    this.enter(ctx, target, false);
    state.status = 'paused_handoff';
    state.reason = 'handoff_step';
    state.next_run_at = now;
    state.handoff_seen_at = now;
    this.event(ctx, 'paused', { reason: 'handoff_step' });
    return undefined;
  }

  /**
   * A send step, in seed 000's order: anchor past its grace → send window (the recipient's zone when the flow asks) → consent → content and the 24-hour window →
   * render → number → per-contact 24 h cap → pacing → in-flight window → monthly quota → queue through `messaging.send`.
   * @returns true when the step is done (queued or skipped) and the flow moves on
   */
  private async send(ctx: ReleaseContext, nodeId: string, config: Extract<ActionConfig, { mode: 'text' | 'template' | 'media' | 'ai' }>): Promise<boolean> {
    const { state, contact, now, organization, tx } = ctx;
    const anchorSkip = anchorSkipReason(config.anchor_grace_ms, state.anchor_at, now);
    if (anchorSkip) return this.skipVisit(ctx, nodeId, anchorSkip);
    const window = recipientSendWindow(ctx.version.settings, organization, contact.time_zone);
    const opening = nextSendOpening(now, window);
    if (opening > now) return this.defer(ctx, nodeId, opening, 'send_window', true);

    const purpose = ctx.version.settings.purpose ?? 'utility';
    const needsConsent = organization.consent_mode === 'all_opt_in' || (organization.consent_mode === 'marketing_opt_in' && purpose === 'marketing');
    if (needsConsent && !contact.tags.includes(organization.consent_tag)) return this.skip(ctx, nodeId, 'no_consent');

    const inServiceWindow = insideServiceWindow(contact.last_inbound_at, now);
    let template: FlowTemplateRef | undefined;
    let aiText: string | undefined;
    let usage: Record<string, unknown> | null = null;
    if (config.mode === 'template') template = config.template;
    else if (!inServiceWindow) {
      // Free text cannot go outside the window, so an AI-written step does not ask the model either.
      if (!config.template_fallback) return this.skip(ctx, nodeId, 'outside_service_window');
      template = config.template_fallback;
    } else if (config.mode === 'ai') {
      const fresh = this.answerFor(ctx, nodeId);
      // Kept until the send goes out: a deferral below (pacing, cap, sender) does not ask the model again.
      if (fresh) state.ai_draft = { node_id: nodeId, step: state.step, at: now.toISOString(), result: fresh };
      const answer = fresh ?? this.storedDraft(ctx, nodeId);
      if (!answer) {
        this.requestAi(ctx, nodeId, 'followup_message', {
          objective: config.instructions,
          ...(contact.name ? { contact: { name: contact.name } } : {}),
          ...(state.last_reply_text ? { thread: [{ direction: 'inbound' as const, text: state.last_reply_text }] } : {}),
        });
        return false;
      }
      usage = (answer.usage as unknown as Record<string, unknown>) ?? null;
      const body = answer.status === 'ok' ? String((answer.output as { body?: unknown } | null)?.body ?? '').trim() : '';
      if (body) aiText = body;
      // Model unavailable, budget exhausted or no usable text: the step's template, else skip (seed 000 "Failure behaviour").
      else if (config.template_fallback) template = config.template_fallback;
      else return this.skip(ctx, nodeId, `ai_${answer.status === 'ok' ? 'empty' : answer.status}`);
    }

    const facts = this.facts(ctx);
    const content: Pick<MessagingSendData, 'text' | 'template' | 'media'> = {};
    let text: string | null = null;
    if (template) {
      const parameters: string[] = [];
      for (const p of template.parameters ?? []) {
        const r = renderTemplate(p, facts);
        if ('missing' in r) return this.skip(ctx, nodeId, `missing_variable:${r.missing}`);
        parameters.push(r.text);
      }
      content.template = { name: template.name, language: template.language, components: parameters.length ? [{ type: 'body', parameters: parameters.map((t) => ({ type: 'text', text: t })) }] : [] };
      template = { ...template, parameters };
    } else if (aiText !== undefined) {
      content.text = text = aiText;
    } else if (config.mode === 'text') {
      const r = renderTemplate(config.body, facts);
      if ('missing' in r) return this.skip(ctx, nodeId, `missing_variable:${r.missing}`);
      content.text = text = r.text;
    } else if (config.mode === 'media') {
      let caption: string | undefined;
      if (config.media.caption) {
        const r = renderTemplate(config.media.caption, facts);
        if ('missing' in r) return this.skip(ctx, nodeId, `missing_variable:${r.missing}`);
        caption = text = r.text;
      }
      content.media = { media_type: config.media.media_type, link: config.media.link, ...(caption ? { caption } : {}), ...(config.media.filename ? { filename: config.media.filename } : {}) };
    }

    let approved: StepSendEffect | undefined;
    if (ctx.version.settings.require_approval) {
      const gate = await this.approvalGate(ctx, nodeId, text, template ?? null);
      if (gate !== 'approved') return gate === 'done';
      approved = await this.release.stepSendEffect(tx, state.id, nodeId, state.step);
    }

    const senderId = await this.chooseSender(ctx);
    if (!senderId) {
      state.sender_unavailable_since ??= now;
      if (now.getTime() - state.sender_unavailable_since.getTime() >= SENDER_PARK_AFTER_MS) {
        this.park(ctx, INSTANCE_UNAVAILABLE);
        this.countStep(ctx, { action: 'send', outcome: 'parked' });
        return false;
      }
      return this.defer(ctx, nodeId, new Date(now.getTime() + SENDER_RETRY_MS), 'sender_unavailable', false);
    }
    state.sender_unavailable_since = null;

    const recent = ctx.recentSends;
    if (recent.count >= organization.contact_daily_cap && recent.oldest) {
      return this.defer(ctx, nodeId, new Date(recent.oldest.getTime() + 24 * 3_600_000 + 1000), 'contact_cap', true);
    }

    const gap = this.config.FOLLOWUP_SENDER_GAP_MS;
    if (gap > 0) {
      const nextRelease = await this.senders.lockPacing(tx, senderId);
      if (nextRelease === 'busy') return this.defer(ctx, nodeId, new Date(now.getTime() + gap), 'pacing', false);
      if (nextRelease > now) return this.defer(ctx, nodeId, nextRelease, 'pacing', false);
    }
    const backlog = await this.inFlight.admit(tx, senderId, now, { enrollmentId: state.id, nodeId, step: state.step });
    if (backlog) return this.defer(ctx, nodeId, backlog.at, backlog.reason, backlog.plan, backlog.announce);
    if (organization.monthly_send_quota !== null) {
      const month = DateTime.fromJSDate(now, { zone: 'utc' }).toFormat('yyyy-MM-01');
      if (!(await this.release.takeMonthlySend(tx, state.organization_id, month, organization.monthly_send_quota))) {
        return this.defer(ctx, nodeId, new Date(now.getTime() + QUOTA_RETRY_MS), 'monthly_quota', true);
      }
    }
    if (gap > 0) await this.senders.setPacing(tx, senderId, new Date(now.getTime() + gap));

    const key = sendKeyOf(state.id, nodeId, state.step);
    const effectId = approved?.id ?? randomUUID();
    if (approved) await this.release.queueApprovedEffect(tx, approved.id, { idempotencyKey: key, text, template: template ?? null, senderId, now });
    else ctx.effects.push({
      id: effectId,
      organizationId: state.organization_id,
      enrollmentId: state.id,
      contactId: state.contact_id,
      nodeId,
      step: state.step,
      kind: 'send',
      status: 'queued',
      idempotencyKey: key,
      text,
      template: template ?? null,
      senderId,
      usage,
    });
    const command: MessagingSendData = {
      organization_id: state.organization_id,
      idempotency_key: key,
      channel: 'whatsapp',
      contact_id: state.contact_id,
      ...(state.conversation_id ? { conversation_id: state.conversation_id } : {}),
      sender_type: 'followup',
      sender_id: state.flow_id,
      outbox_sender_id: senderId,
      requester: 'followups',
      ...content,
      context: { followup_enrollment_id: state.id, followup_effect_id: effectId, followup_node_id: nodeId },
    };
    // The step's own record is the effect and the `step_queued` timeline entry; only the command goes on the bus.
    ctx.messages.push({ event_id: key, type: MessagingCommands.Send, organization_id: state.organization_id, data: command });
    state.inflight_effect_id = effectId;
    state.last_send_status = 'queued';
    state.sender_id = senderId;
    ctx.sent = true;
    this.event(ctx, 'step_queued', { effect_id: effectId, idempotency_key: key, template: template?.name ?? null });
    this.countStep(ctx, { action: 'send', outcome: 'queued' });
    return true;
  }

  /**
   * An `ai_classify` node: the newest reply's class from the model (second pass), or the
   * fallback class when there is no reply, the model failed, answered a class the node does not
   * have, or was less confident than `min_confidence` (seed 000 "low confidence / failure").
   */
  private classify(ctx: ReleaseContext, nodeId: string, config: AiClassifyConfig): ExitKey | undefined {
    const { state } = ctx;
    const reply = state.last_reply_text?.trim();
    let classId = config.fallback_class_id;
    let fallback: string | null = 'no_reply';
    let usage: Record<string, unknown> | null = null;
    let confidence: number | null = null;
    if (reply) {
      const answer = this.answerFor(ctx, nodeId);
      if (!answer) {
        this.requestAi(ctx, nodeId, 'followup_classify', {
          reply,
          classes: config.classes.map((c) => ({ id: c.id, description: c.description ?? c.label })),
          ...(config.instructions ? { guidance: config.instructions } : {}),
        });
        return undefined;
      }
      usage = (answer.usage as unknown as Record<string, unknown>) ?? null;
      const out = answer.output as { class?: unknown; confidence?: unknown } | null;
      confidence = typeof out?.confidence === 'number' ? out.confidence : null;
      const known = config.classes.find((c) => c.id === out?.class);
      if (answer.status !== 'ok') fallback = answer.status;
      else if (!known) fallback = 'unknown_class';
      else if (confidence === null || confidence < config.min_confidence) fallback = 'low_confidence';
      else {
        classId = known.id;
        fallback = null;
      }
    }
    ctx.effects.push({ id: randomUUID(), organizationId: state.organization_id, enrollmentId: state.id, contactId: state.contact_id, nodeId, step: state.step, kind: 'classification', status: 'done', text: classId, reason: fallback ? `fallback:${fallback}` : null, usage });
    this.event(ctx, 'classified', { class_id: classId, confidence, fallback });
    this.countStep(ctx, { action: 'ai_classify', outcome: fallback ? 'fallback' : 'classified' });
    return `class:${classId}`;
  }

  /** The model's answer for this visit of `nodeId`, when this is the AI step's second pass. */
  private answerFor(ctx: ReleaseContext, nodeId: string): AiRunResult | undefined {
    const ai = ctx.ai;
    return ai && ai.request.nodeId === nodeId && ai.request.step === ctx.state.step && ai.request.attempts === ctx.state.ai_attempts ? ai.result : undefined;
  }

  /**
   * The answer kept from an earlier release of this visit of `nodeId` whose send was deferred:
   * only while it is younger than AI_DRAFT_TTL_MS and the contact has not written since.
   */
  private storedDraft(ctx: ReleaseContext, nodeId: string): AiRunResult | undefined {
    const draft = ctx.state.ai_draft;
    if (!draft || draft.node_id !== nodeId || draft.step !== ctx.state.step) return undefined;
    const at = Date.parse(draft.at);
    if (ctx.now.getTime() - at > AI_DRAFT_TTL_MS) return undefined;
    if (ctx.contact.last_inbound_at && ctx.contact.last_inbound_at.getTime() > at) return undefined;
    return draft.result;
  }

  /** First pass of an AI step: lease and fence now, the model call after the commit. */
  private requestAi(ctx: ReleaseContext, nodeId: string, kind: StepAiKind, input: AiInputByKind[StepAiKind]): void {
    const { state, now } = ctx;
    state.ai_attempts += 1;
    state.locked_until = new Date(now.getTime() + this.config.FOLLOWUP_AI_LEASE_MS);
    // Nothing claims it before the lease runs out; then another release re-runs the step.
    state.next_run_at = state.locked_until;
    ctx.aiRequest = { enrollmentId: state.id, organizationId: state.organization_id, nodeId, step: state.step, attempts: state.ai_attempts, kind, input };
    this.event(ctx, 'ai_requested', { kind, attempt: state.ai_attempts });
  }

  /**
   * The approval of a send (seed 002 "Efeitos"), for flows with `require_approval`. The first visit
   * records the send as `awaiting_decision` and the enrollment waits (no `next_run_at`) until the
   * decision wakes it. A rejection ends the step; an approval is checked again now, before the
   * send: if its key was revoked or the approver left, the send becomes `rejected` /
   * `approval_revoked` and the step ends without sending.
   * @returns `approved` to send now, `done` when the step is over without a send, `waiting` otherwise
   */
  private async approvalGate(ctx: ReleaseContext, nodeId: string, text: string | null, template: FlowTemplateRef | null): Promise<'approved' | 'done' | 'waiting'> {
    const { state, tx, now } = ctx;
    const existing = await this.release.stepSendEffect(tx, state.id, nodeId, state.step);
    if (!existing) {
      ctx.effects.push({ id: randomUUID(), organizationId: state.organization_id, enrollmentId: state.id, contactId: state.contact_id, nodeId, step: state.step, kind: 'send', status: 'awaiting_decision', text, template });
      state.next_run_at = null;
      this.event(ctx, 'awaiting_decision', {});
      this.countStep(ctx, { action: 'send', outcome: 'awaiting_decision' });
      return 'waiting';
    }
    if (existing.status === 'awaiting_decision') {
      state.next_run_at = null;
      return 'waiting';
    }
    if (existing.status !== 'approved') {
      // Rejected by a person (or already settled): the step is over.
      this.countStep(ctx, { action: 'send', outcome: existing.status });
      return 'done';
    }
    let check: ApprovalCheckView;
    try {
      check = await this.rpc.call(
        'gateway',
        GatewayApprovalRpc.Check,
        { organization_id: state.organization_id, api_key_id: existing.decided_by_api_key_id, member_id: existing.decided_by_member_id } satisfies Record<keyof ApprovalCheckData, unknown>,
        this.config.FOLLOWUP_ACTION_RPC_TIMEOUT_MS,
      );
    } catch (err) {
      if (!(err instanceof AppError && err.code === ErrorCode.ServiceUnavailable)) throw err;
      // The gateway cannot vouch for the approval now: never send unchecked, never count it a failure; ask again soon.
      state.next_run_at = new Date(now.getTime() + SENDER_RETRY_MS);
      this.countStep(ctx, { action: 'send', outcome: 'approval_check_unavailable' });
      return 'waiting';
    }
    if (check.valid) return 'approved';
    await this.release.rejectEffect(tx, existing.id, 'approval_revoked', now);
    this.event(ctx, 'approval_revoked', { effect_id: existing.id, cause: check.reason });
    this.countStep(ctx, { action: 'send', outcome: 'approval_revoked' });
    return 'done';
  }

  /** The number that sends: the first usable link of seed 000's chain (see NumberChain). */
  private chooseSender(ctx: ReleaseContext): Promise<string | undefined> {
    const { state, contact, tx } = ctx;
    return this.numbers.choose(tx, state.organization_id, { enrollmentSenderId: state.sender_id, flowSender: ctx.version.settings.sender, lastConversationSenderId: contact.last_sender_id });
  }

  /** Enters a node: a new visit. Waits start their clock; other nodes are due now. @returns whether to run it in this release */
  private enter(ctx: ReleaseContext, nodeId: string, runNow = true): boolean {
    const { state, now, version } = ctx;
    const node = version.graph.nodes.get(nodeId);
    if (!node) throw new Error(`node ${nodeId} is not in version ${version.id}`);
    state.node_id = nodeId;
    state.step += 1;
    state.node_entered_at = now;
    state.pending_exit = null;
    state.ai_draft = null;
    if (node.type === 'wait') {
      const ms = node.config.mode === 'fixed' ? node.config.duration_ms : node.config.timeout_ms;
      state.next_run_at = new Date(now.getTime() + ms);
      state.status = node.config.mode === 'reply' ? 'waiting_reply' : 'active';
      if (node.config.mode === 'reply') state.reply_seen_at = now;
      this.event(ctx, 'waiting', { until: state.next_run_at.toISOString(), mode: node.config.mode });
      return false;
    }
    state.status = 'active';
    state.next_run_at = now;
    return runNow;
  }

  /** Moves the step to `at`; a deferral to the window, cap or quota is also shown as a schedule plan (seed 002 "planos de horário"). */
  private async defer(ctx: ReleaseContext, nodeId: string, at: Date, reason: string, plan: boolean, announce = true): Promise<false> {
    const { state, now, tx } = ctx;
    state.next_run_at = at;
    this.countStep(ctx, { action: 'send', outcome: `deferred_${reason}` });
    if (plan) {
      await this.release.upsertSchedulePlan(tx, { id: randomUUID(), organizationId: state.organization_id, enrollmentId: state.id, contactId: state.contact_id, nodeId, step: state.step, reason, at, now });
      if (announce) this.event(ctx, 'deferred', { reason, until: at.toISOString() });
    }
    return false;
  }

  private async skip(ctx: ReleaseContext, nodeId: string, reason: string): Promise<true> {
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
  private async skipVisit(ctx: ReleaseContext, nodeId: string, reason: string): Promise<true> {
    const existing = ctx.version.settings.require_approval ? await this.release.stepSendEffect(ctx.tx, ctx.state.id, nodeId, ctx.state.step) : undefined;
    if (!existing) return this.skip(ctx, nodeId, reason);
    if (existing.status === 'awaiting_decision' || existing.status === 'approved') await this.release.rejectEffect(ctx.tx, existing.id, reason, ctx.now);
    this.event(ctx, 'step_skipped', { reason, effect_id: existing.id });
    this.countStep(ctx, { action: 'send', outcome: 'skipped' });
    return true;
  }

  /** Parks the enrollment (`dormente`) until its cause clears. */
  private park(ctx: ReleaseContext, reason: string): void {
    ctx.state.status = 'dormente';
    ctx.state.reason = reason;
    this.event(ctx, 'parked', { reason });
  }

  /** Ends the enrollment. @returns false (nothing more runs) */
  private finish(ctx: ReleaseContext, status: 'completed' | 'cancelled', reason: string, action: string): false {
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
  private countStep(ctx: ReleaseContext, labels: { action: string; outcome: string }): void {
    ctx.tx.afterCommit(() => this.metrics.steps.inc(labels));
  }

  private event(ctx: ReleaseContext, type: string, data: Record<string, unknown>): void {
    ctx.events.push({ organization_id: ctx.state.organization_id, enrollment_id: ctx.state.id, type, node_id: ctx.state.node_id, data, at: ctx.now });
  }

  private facts(ctx: ReleaseContext): StepFacts {
    return { contact: ctx.contact, enrollment: ctx.state, timezone: recipientSendWindow(ctx.version.settings, ctx.organization, ctx.contact.time_zone).timezone };
  }
}

