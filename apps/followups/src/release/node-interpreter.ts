import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type FlowStatus, FollowupsEvents, MessagingRpc } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { APP_CONFIG, RpcClient } from '@touchpoint/runtime';
import { type ContactActivity, ContactsRepository } from '../contacts/contacts.repository.js';
import type { EnrollmentRow } from '../enrollments/enrollment-row.js';
import { FlowVersionCache } from '../flows/flow-version-cache.js';
import type { FollowupsConfig } from '../followups.config.js';
import { type ActionConfig, type AiClassifyConfig, type ExitKey, isSendAction, type ParsedNode } from '../graph/node-config.js';
import { SettingsService } from '../settings/settings.service.js';
import { AiStepLease } from './ai-step-lease.js';
import { type AiAnswer, type AiRequest, factsOf, type PendingWrites, type ReleaseContext } from './release-context.js';
import { SendStep } from './send-step.js';
import { evaluateCondition, matchReply } from './step-rules.js';
import { StepOutcomes } from './step-outcomes.js';

/** Node transitions one release may chain (instant nodes); more means a bug, not a flow. */
const MAX_TRANSITIONS = 64;

/**
 * One enrollment's step inside the release transaction (seed 000 "Release", adapted to the graph):
 * the checks, then the current node and every instant node after it, until the enrollment waits,
 * finishes, is deferred, or has queued one send (SendStep). Changes only the step's working state
 * (ReleaseContext); ReleaseService writes it.
 */
@Injectable()
export class NodeInterpreter {
  constructor(
    private readonly versions: FlowVersionCache,
    private readonly settings: SettingsService,
    private readonly contacts: ContactsRepository,
    private readonly sends: SendStep,
    private readonly lease: AiStepLease,
    private readonly outcomes: StepOutcomes,
    private readonly rpc: RpcClient,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
  ) {}

  /**
   * Checks, then nodes; the enrollment's new state, its timeline, effects and messages go to `pending`.
   * @param state the claimed row (its failure count, last error and AI lease are cleared: this release got it)
   * @param ai the model's answer, on an AI step's second pass
   * @returns whether a send was queued, and the model call a first pass leaves for after the commit
   */
  async step(tx: Tx, now: Date, state: EnrollmentRow, contact: ContactActivity, flowStatus: FlowStatus, recentSends: ReleaseContext['recentSends'], pending: PendingWrites, ai?: AiAnswer): Promise<{ sent: boolean; aiRequest?: AiRequest }> {
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
      this.outcomes.park(ctx, 'flow_paused');
      return false;
    }
    if (!ctx.organization.followups_enabled) return this.outcomes.finish(ctx, 'cancelled', 'plan_lost', 'check');
    if (flowStatus === 'archived') return this.outcomes.finish(ctx, 'cancelled', 'flow_archived', 'check');
    if (contact.erased_at) return this.outcomes.finish(ctx, 'cancelled', 'contact_erased', 'check');
    if (contact.opted_out_at) return this.outcomes.finish(ctx, 'cancelled', 'opted_out', 'check');
    const seen = state.reply_seen_at ?? state.created_at;
    if (contact.last_inbound_at && contact.last_inbound_at > seen) {
      state.reply_seen_at = contact.last_inbound_at;
      state.last_reply_text = contact.last_inbound_text;
      if (state.status === 'waiting_reply') state.pending_exit = 'branch:replied';
      else if (state.cancel_on_reply) return this.outcomes.finish(ctx, 'completed', 'replied', 'check');
    }
    const handoffSeen = state.handoff_seen_at ?? state.created_at;
    if (contact.handoff_at && contact.handoff_at > handoffSeen && state.handoff_policy !== 'continue') {
      state.handoff_seen_at = contact.handoff_at;
      if (state.handoff_policy === 'stop') return this.outcomes.finish(ctx, 'cancelled', 'handoff', 'check');
      state.status = 'paused_handoff';
      state.reason = 'handoff';
      this.outcomes.event(ctx, 'paused', { reason: 'handoff' });
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
        this.outcomes.countStep(ctx, { action: 'wait', outcome: exit === 'branch:replied' ? 'replied' : 'elapsed' });
        return exit;
      }
      case 'condition': {
        const result = evaluateCondition(node.config, factsOf(ctx));
        this.outcomes.countStep(ctx, { action: 'condition', outcome: String(result) });
        this.outcomes.event(ctx, 'condition_evaluated', { result });
        return `cond:${result}`;
      }
      case 'match_reply': {
        const branch = matchReply(node.config, state.last_reply_text);
        this.outcomes.countStep(ctx, { action: 'match_reply', outcome: branch === 'default' ? 'default' : 'matched' });
        this.outcomes.event(ctx, 'reply_matched', { branch_id: branch });
        return `branch:${branch}`;
      }
      case 'repeat': {
        const count = state.repeat_counts[node.id] ?? 0;
        const again = count < node.config.max_count;
        state.repeat_counts = { ...state.repeat_counts, [node.id]: again ? count + 1 : 0 };
        this.outcomes.countStep(ctx, { action: 'repeat', outcome: again ? 'again' : 'done' });
        return again ? 'branch:again' : 'branch:done';
      }
      case 'end':
        this.outcomes.finish(ctx, 'completed', node.config.outcome, 'end');
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
      const sent = await this.sends.send(ctx, nodeId, config);
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
      this.outcomes.countStep(ctx, { action: config.mode, outcome: 'done' });
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
    this.outcomes.countStep(ctx, { action: 'handoff', outcome: 'done' });
    const target = ctx.version.graph.next.get(nodeId)?.get('always');
    if (!target) throw new Error(`node ${nodeId} has no edge for exit always`);
    this.enter(ctx, target, false);
    state.status = 'paused_handoff';
    state.reason = 'handoff_step';
    state.next_run_at = now;
    state.handoff_seen_at = now;
    this.outcomes.event(ctx, 'paused', { reason: 'handoff_step' });
    return undefined;
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
      const answer = this.lease.answerFor(ctx, nodeId);
      if (!answer) {
        this.lease.request(ctx, nodeId, 'followup_classify', {
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
    this.outcomes.event(ctx, 'classified', { class_id: classId, confidence, fallback });
    this.outcomes.countStep(ctx, { action: 'ai_classify', outcome: fallback ? 'fallback' : 'classified' });
    return `class:${classId}`;
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
      this.outcomes.event(ctx, 'waiting', { until: state.next_run_at.toISOString(), mode: node.config.mode });
      return false;
    }
    state.status = 'active';
    state.next_run_at = now;
    return runNow;
  }
}
