import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type ApprovalCheckData, type ApprovalCheckView, type FlowTemplateRef, GatewayApprovalRpc, MessagingCommands, type MessagingSendData } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG, RpcClient } from '@touchpoint/runtime';
import { sendKeyOf } from '../enrollments/enrollment-row.js';
import type { FollowupsConfig } from '../followups.config.js';
import { AiStepLease } from './ai-step-lease.js';
import { factsOf, type ReleaseContext } from './release-context.js';
import { ReleaseRepository, type StepSendEffect } from './release.repository.js';
import { type GateStop, SENDER_RETRY_MS, SendGate, type SendActionConfig } from './send-gate.js';
import { renderTemplate } from './step-rules.js';
import { StepOutcomes } from './step-outcomes.js';

/**
 * A send step, in seed 000's order: the gate's opening (anchor past its grace → send window, the
 * recipient's zone when the flow asks → consent) → content and the 24-hour window (an AI-written
 * text asks the model here) → render → approval (flows with `require_approval`) → the gate's
 * admission (number → per-contact 24 h cap → pacing → in-flight window → monthly quota) → queue
 * through `messaging.send`. The rules are SendGate's; this class builds the message and applies
 * what the gate decided.
 */
@Injectable()
export class SendStep {
  constructor(
    private readonly release: ReleaseRepository,
    private readonly gate: SendGate,
    private readonly lease: AiStepLease,
    private readonly outcomes: StepOutcomes,
    private readonly rpc: RpcClient,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
  ) {}

  /**
   * Runs one send node.
   * @returns true when the step is done (queued or skipped) and the flow moves on
   */
  async send(ctx: ReleaseContext, nodeId: string, config: SendActionConfig): Promise<boolean> {
    const { state, contact, now, tx } = ctx;
    const opening = this.gate.opening(ctx, config);
    if (opening) return this.stop(ctx, nodeId, opening);

    const route = this.gate.contentRoute(ctx, config);
    if (route.kind !== 'template' && route.kind !== 'free') return this.stop(ctx, nodeId, route);
    let template = route.kind === 'template' ? route.template : undefined;
    let aiText: string | undefined;
    let usage: Record<string, unknown> | null = null;
    if (route.kind === 'free' && config.mode === 'ai') {
      const fresh = this.lease.answerFor(ctx, nodeId);
      // Kept until the send goes out: a deferral below (pacing, cap, sender) does not ask the model again.
      if (fresh) state.ai_draft = { node_id: nodeId, step: state.step, at: now.toISOString(), result: fresh };
      const answer = fresh ?? this.lease.storedDraft(ctx, nodeId);
      if (!answer) {
        this.lease.request(ctx, nodeId, 'followup_message', {
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
      else return this.outcomes.skip(ctx, nodeId, `ai_${answer.status === 'ok' ? 'empty' : answer.status}`);
    }

    const facts = factsOf(ctx);
    const content: Pick<MessagingSendData, 'text' | 'template' | 'media'> = {};
    let text: string | null = null;
    if (template) {
      const parameters: string[] = [];
      for (const p of template.parameters ?? []) {
        const r = renderTemplate(p, facts);
        if ('missing' in r) return this.outcomes.skip(ctx, nodeId, `missing_variable:${r.missing}`);
        parameters.push(r.text);
      }
      content.template = { name: template.name, language: template.language, components: parameters.length ? [{ type: 'body', parameters: parameters.map((t) => ({ type: 'text', text: t })) }] : [] };
      template = { ...template, parameters };
    } else if (aiText !== undefined) {
      content.text = text = aiText;
    } else if (config.mode === 'text') {
      const r = renderTemplate(config.body, facts);
      if ('missing' in r) return this.outcomes.skip(ctx, nodeId, `missing_variable:${r.missing}`);
      content.text = text = r.text;
    } else if (config.mode === 'media') {
      let caption: string | undefined;
      if (config.media.caption) {
        const r = renderTemplate(config.media.caption, facts);
        if ('missing' in r) return this.outcomes.skip(ctx, nodeId, `missing_variable:${r.missing}`);
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

    const admitted = await this.gate.admit(ctx, nodeId);
    if (admitted.kind !== 'admit') return this.stop(ctx, nodeId, admitted);
    const { senderId } = admitted;

    const key = sendKeyOf(state.id, nodeId, state.step);
    const effectId = approved?.id ?? randomUUID();
    if (approved) await this.release.queueApprovedEffect(tx, approved.id, { idempotencyKey: key, text, template: template ?? null, senderId, now });
    else
      ctx.effects.push({
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
      // A reply ends a cancel_on_reply enrollment (stop-paths): the dispatcher holds this send after one.
      ...(state.cancel_on_reply ? { stop_on_reply: true } : {}),
      ...content,
      context: { followup_enrollment_id: state.id, followup_effect_id: effectId, followup_node_id: nodeId },
    };
    // The step's own record is the effect and the `step_queued` timeline entry; only the command goes on the bus.
    ctx.messages.push({ event_id: key, type: MessagingCommands.Send, organization_id: state.organization_id, data: command });
    state.inflight_effect_id = effectId;
    state.last_send_status = 'queued';
    state.sender_id = senderId;
    ctx.sent = true;
    this.outcomes.event(ctx, 'step_queued', { effect_id: effectId, idempotency_key: key, template: template?.name ?? null });
    this.outcomes.countStep(ctx, { action: 'send', outcome: 'queued' });
    return true;
  }

  /** Applies what the gate decided. @returns true when the step is over (skipped), false when it waits */
  private async stop(ctx: ReleaseContext, nodeId: string, stop: GateStop): Promise<boolean> {
    switch (stop.kind) {
      case 'skip':
        return stop.visit ? this.outcomes.skipVisit(ctx, nodeId, stop.reason) : this.outcomes.skip(ctx, nodeId, stop.reason);
      case 'defer':
        return this.outcomes.defer(ctx, nodeId, stop.at, stop.reason, stop.plan, stop.announce);
      case 'park':
        this.outcomes.park(ctx, stop.reason);
        this.outcomes.countStep(ctx, { action: 'send', outcome: 'parked' });
        return false;
    }
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
      this.outcomes.event(ctx, 'awaiting_decision', {});
      this.outcomes.countStep(ctx, { action: 'send', outcome: 'awaiting_decision' });
      return 'waiting';
    }
    if (existing.status === 'awaiting_decision') {
      state.next_run_at = null;
      return 'waiting';
    }
    if (existing.status !== 'approved') {
      // Rejected by a person (or already settled): the step is over.
      this.outcomes.countStep(ctx, { action: 'send', outcome: existing.status });
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
      this.outcomes.countStep(ctx, { action: 'send', outcome: 'approval_check_unavailable' });
      return 'waiting';
    }
    if (check.valid) return 'approved';
    await this.release.rejectEffect(tx, existing.id, 'approval_revoked', now);
    this.outcomes.event(ctx, 'approval_revoked', { effect_id: existing.id, cause: check.reason });
    this.outcomes.countStep(ctx, { action: 'send', outcome: 'approval_revoked' });
    return 'done';
  }
}
