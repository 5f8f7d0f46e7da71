import { Inject, Injectable } from '@nestjs/common';
import { AI_DEFAULT_OUTPUT_SCHEMAS, AiClient, type AiInputByKind, type AiRunResult } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import type { AiAnswer, AiRequest, ReleaseContext, StepAiKind } from './release-context.js';
import { StepOutcomes } from './step-outcomes.js';

/** How long an AI-written send's answer stays usable while the send waits, ms (then the model is asked again). */
export const AI_DRAFT_TTL_MS = 60 * 60_000;

/**
 * The lease and fence of an AI step (seed 000 "AI step"), which takes two release transactions
 * around its model call: the first pass leases the enrollment (`locked_until`, `next_run_at` moved
 * there) and bumps `ai_attempts` (`request`), then commits; the model is called with no lock held
 * (`ask`); the second pass claims the same enrollment only while `ai_attempts`, node and visit are
 * unchanged (`fenceOf`, ReleaseRepository.claimDue), re-runs every check under the lock and uses
 * the answer (`answerFor`). A worker that died mid-call leaves a lease that expires: another
 * release runs the step with a new fence, and a late answer finds the fence moved and is dropped
 * (`dropped`).
 */
@Injectable()
export class AiStepLease {
  private readonly ai: AiClient;

  constructor(
    rpc: RpcClient,
    private readonly outcomes: StepOutcomes,
    private readonly metrics: FollowupsMetrics,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.ai = new AiClient(rpc);
  }

  /** First pass of an AI step: lease and fence now (FOLLOWUP_AI_LEASE_MS), the model call after the commit. */
  request(ctx: ReleaseContext, nodeId: string, kind: StepAiKind, input: AiInputByKind[StepAiKind]): void {
    const { state, now } = ctx;
    state.ai_attempts += 1;
    state.locked_until = new Date(now.getTime() + this.config.FOLLOWUP_AI_LEASE_MS);
    // Nothing claims it before the lease runs out; then another release re-runs the step.
    state.next_run_at = state.locked_until;
    ctx.aiRequest = { enrollmentId: state.id, organizationId: state.organization_id, nodeId, step: state.step, attempts: state.ai_attempts, kind, input };
    this.outcomes.event(ctx, 'ai_requested', { kind, attempt: state.ai_attempts });
  }

  /** The model call of a first pass, made with no lock held (deadline FOLLOWUP_AI_TIMEOUT_MS); never throws for a model failure (its status says it). */
  async ask(request: AiRequest): Promise<AiAnswer> {
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
    return { request, result };
  }

  /** The fence the second pass claims its enrollment under (ReleaseRepository.claimDue). */
  fenceOf(answer: AiAnswer): { id: string; aiAttempts: number; nodeId: string; step: number } {
    const { request } = answer;
    return { id: request.enrollmentId, aiAttempts: request.attempts, nodeId: request.nodeId, step: request.step };
  }

  /** Records a second pass whose fence no longer holds: another release took the step over (our lease ran out), or it moved on. */
  dropped(answer: AiAnswer): void {
    const { request } = answer;
    this.metrics.aiRequests.inc({ kind: request.kind, status: 'late_dropped' });
    this.logger.info({ event: 'followups.ai_late_answer_dropped', enrollment_id: request.enrollmentId, node_id: request.nodeId, attempts: request.attempts }, 'late AI answer dropped');
  }

  /** The model's answer for this visit of `nodeId`, when this is the AI step's second pass. */
  answerFor(ctx: ReleaseContext, nodeId: string): AiRunResult | undefined {
    const ai = ctx.ai;
    return ai && ai.request.nodeId === nodeId && ai.request.step === ctx.state.step && ai.request.attempts === ctx.state.ai_attempts ? ai.result : undefined;
  }

  /**
   * The answer kept from an earlier release of this visit of `nodeId` whose send was deferred:
   * only while it is younger than AI_DRAFT_TTL_MS and the contact has not written since.
   */
  storedDraft(ctx: ReleaseContext, nodeId: string): AiRunResult | undefined {
    const draft = ctx.state.ai_draft;
    if (!draft || draft.node_id !== nodeId || draft.step !== ctx.state.step) return undefined;
    const at = Date.parse(draft.at);
    if (ctx.now.getTime() - at > AI_DRAFT_TTL_MS) return undefined;
    if (ctx.contact.last_inbound_at && ctx.contact.last_inbound_at.getTime() > at) return undefined;
    return draft.result;
  }
}
