import { Inject, Injectable } from '@nestjs/common';
import type { AiRunResult, AiUsage } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { toStorableText, truncateText } from '@touchpoint/text';
import { Clock, sleep } from '@touchpoint/time';
import type { AiGatewayConfig } from '../ai-gateway.config.js';
import { BudgetService } from '../budget/budget.service.js';
import { costOf, ledgerMonthOf } from '../budget/price-table.js';
import { PROMPT_TEMPLATES } from '../prompts/prompt-templates.js';
import { renderPrompt } from '../prompts/prompt-renderer.js';
import type { RenderedPrompt } from '../prompts/prompt.types.js';
import { ModelProvider } from '../provider/model-provider.js';
import { checkOutput } from './output-check.js';
import type { ValidRunRequest } from './run-request.js';
import { RunsMetrics } from './runs.metrics.js';
import { type RunClaim, type RunOutcome, type RunRow, RunsRepository } from './runs.repository.js';

/** Poll interval of a request waiting behind a concurrent one with the same key: starts short, doubles to the cap. */
const WAIT_FIRST_POLL_MS = 20;
const WAIT_MAX_POLL_MS = 250;

/** Stored raw answers are cut here: enough to see what went wrong, bounded row size. */
const RAW_OUTPUT_MAX_CHARS = 20_000;

/**
 * `ai.run`: one idempotent, budgeted, checked model call (DESIGN §6: "Agno agent run" → `ai.run`).
 *
 * - Idempotent on (organization, idempotency_key): the first request inserts the `ai_runs` row as
 *   `running` (the unique key is the claim); a repeat returns the stored result without calling the
 *   model; a concurrent repeat polls the row until it settles, or takes it over once its lease
 *   (timeout + `AI_LEASE_MARGIN_MS`) has expired because the owner died.
 * - Budgeted: a monthly limit reached answers `budget_exhausted` before any call (seed 000).
 * - One turn, JSON asked for, no automatic second call; the answer is checked against the caller's
 *   required fields only (seed 003 §4.3–4.4).
 * - Logs carry ids, statuses and counts, never the prompt or the output.
 */
@Injectable()
export class RunsService {
  private readonly unpricedModels = new Set<string>();
  private readonly prices;

  constructor(
    private readonly repository: RunsRepository,
    private readonly budget: BudgetService,
    private readonly model: ModelProvider,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly metrics: RunsMetrics,
    @Inject(APP_CONFIG) private readonly config: AiGatewayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.prices = config.priceTable;
  }

  /**
   * Runs (or replays) one request.
   * @throws AppError service_unavailable when a concurrent run with the same key is still inside
   *   its lease after this request's own deadline (the caller may retry with the same key)
   */
  async run(request: ValidRunRequest): Promise<AiRunResult> {
    const prompt = renderPrompt(PROMPT_TEMPLATES[request.kind], request.input, request.output_schema);
    const claim: RunClaim = {
      organization_id: request.organization_id,
      idempotency_key: request.idempotency_key,
      kind: request.kind,
      prompt_version: prompt.version,
      input_sha256: prompt.sha256,
      model: this.config.modelFor(request.kind),
      lease_ms: request.timeout_ms + this.config.AI_LEASE_MARGIN_MS,
    };
    const claimed = await this.repository.claim(claim);
    let run = claimed.run;
    if (!claimed.owned) {
      const settled = await this.waitOrTakeOver(claimed.run, claim, request.timeout_ms);
      if (settled.status !== 'running') return this.replay(settled, prompt);
      run = settled;
    }
    return this.execute(run, request, prompt, claim.model);
  }

  /**
   * Waits for a run another request holds. Returns the settled row, or the row taken over (status
   * `running`, our fence) when the holder's lease expired.
   */
  private async waitOrTakeOver(first: RunRow, claim: RunClaim, timeoutMs: number): Promise<RunRow> {
    const deadline = Date.now() + timeoutMs + this.config.AI_LEASE_MARGIN_MS;
    let run: RunRow | undefined = first;
    let pause = WAIT_FIRST_POLL_MS;
    for (;;) {
      if (run && run.status !== 'running') return run;
      if (run?.lease_expired) {
        const taken = await this.repository.takeOver(run, claim);
        if (taken) {
          this.logger.warn({ event: 'ai.run_taken_over', organization_id: claim.organization_id, run_id: taken.id, attempt: taken.attempt }, 'run lease expired; taking it over');
          return taken;
        }
      }
      if (Date.now() >= deadline) {
        throw new AppError(ErrorCode.ServiceUnavailable, 'a run with this idempotency key is still in progress', { run_id: first.id, reason: 'run_in_progress' });
      }
      await sleep(pause);
      pause = Math.min(pause * 2, WAIT_MAX_POLL_MS);
      run = await this.repository.find(claim.organization_id, claim.idempotency_key);
    }
  }

  private replay(run: RunRow, prompt: RenderedPrompt): AiRunResult {
    this.metrics.requests.inc({ kind: run.kind, outcome: 'replayed' });
    if (run.input_sha256 !== prompt.sha256) {
      // Allowed (the key names the cause, and a retry may rebuild a slightly different context), but worth seeing.
      this.logger.debug({ event: 'ai.run_replayed_with_other_input', organization_id: run.organization_id, run_id: run.id }, 'same key, different rendered input');
    }
    const status = run.status as AiRunResult['status'];
    return {
      run_id: run.id,
      status,
      output: status === 'ok' ? run.output : null,
      usage: run.prompt_tokens === null && run.completion_tokens === null ? null : usageOf(run.prompt_tokens ?? 0, run.completion_tokens ?? 0, run.cost_usd ?? 0, run.latency_ms ?? 0),
      ...(run.reason ? { reason: run.reason } : {}),
      replayed: true,
      prompt_version: run.prompt_version,
    };
  }

  private async execute(run: RunRow, request: ValidRunRequest, prompt: RenderedPrompt, model: string): Promise<AiRunResult> {
    if (!this.model.configured) {
      return this.settle(run, request, prompt, model, { ...NO_CALL, status: 'unavailable', reason: 'no model configured (AI_BASE_URL is none)' }, false);
    }
    const month = ledgerMonthOf(this.clock.now());
    const verdict = await this.budget.check(request.organization_id, request.kind, month);
    if (!verdict.allowed) return this.settle(run, request, prompt, model, { ...NO_CALL, status: 'budget_exhausted', reason: verdict.reason }, false, month);

    const started = performance.now();
    const response = await this.model.complete({
      model,
      system: prompt.system,
      user: prompt.user,
      timeoutMs: request.timeout_ms,
      maxOutputTokens: this.config.AI_MAX_OUTPUT_TOKENS,
    });
    const latencyMs = Math.round(performance.now() - started);

    let outcome: RunOutcome;
    if (response.outcome === 'timeout') {
      outcome = { ...NO_CALL, status: 'timeout', reason: `no answer within ${request.timeout_ms} ms`, latency_ms: latencyMs };
    } else if (response.outcome === 'failed') {
      outcome = { ...NO_CALL, status: 'unavailable', reason: response.reason, latency_ms: latencyMs };
    } else {
      const promptTokens = response.usage?.prompt_tokens ?? 0;
      const completionTokens = response.usage?.completion_tokens ?? 0;
      const cost = this.costOf(model, promptTokens, completionTokens);
      const checked = checkOutput(response.content, request.output_schema);
      outcome = {
        status: checked.valid ? 'ok' : 'invalid_output',
        output: checked.output,
        raw_output: checked.valid ? null : toStorableText(truncateText(response.content ?? '', RAW_OUTPUT_MAX_CHARS)),
        reason: checked.valid ? null : checked.reason,
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        cost_usd: cost,
        latency_ms: latencyMs,
      };
      this.metrics.tokens.inc({ kind: request.kind, type: 'prompt' }, promptTokens);
      this.metrics.tokens.inc({ kind: request.kind, type: 'completion' }, completionTokens);
      this.metrics.costUsd.inc({ kind: request.kind }, cost);
    }
    this.metrics.latencySeconds.observe({ kind: request.kind, outcome: outcome.status }, latencyMs / 1000);
    return this.settle(run, request, prompt, model, outcome, true, month);
  }

  /** Stores the outcome (fenced) and, when a call was made, adds it to the ledger, in one transaction. */
  private async settle(run: RunRow, request: ValidRunRequest, prompt: RenderedPrompt, model: string, outcome: RunOutcome, called: boolean, month?: string): Promise<AiRunResult> {
    const written = await this.uow.run(async (tx) => {
      // A call that was made is paid for, even by a holder that lost its lease: the ledger takes it either way.
      if (called && month) {
        await this.budget.record(tx, {
          organization_id: request.organization_id,
          kind: request.kind,
          month,
          prompt_tokens: outcome.prompt_tokens ?? 0,
          completion_tokens: outcome.completion_tokens ?? 0,
          cost_usd: outcome.cost_usd ?? 0,
        });
      }
      return this.repository.finish(tx, run, outcome);
    });
    if (!written) {
      this.logger.warn({ event: 'ai.run_fenced_out', organization_id: request.organization_id, run_id: run.id, attempt: run.attempt }, 'run was taken over; result not stored');
    }
    this.metrics.requests.inc({ kind: request.kind, outcome: outcome.status });
    this.logger.info(
      {
        event: 'ai.run_finished',
        organization_id: request.organization_id,
        run_id: run.id,
        kind: request.kind,
        status: outcome.status,
        reason: outcome.reason ?? undefined,
        prompt_version: prompt.version,
        model,
        latency_ms: outcome.latency_ms ?? undefined,
        prompt_tokens: outcome.prompt_tokens ?? undefined,
        completion_tokens: outcome.completion_tokens ?? undefined,
      },
      'ai run finished',
    );
    const answered = outcome.prompt_tokens !== null;
    return {
      run_id: run.id,
      status: outcome.status,
      output: outcome.status === 'ok' ? (outcome.output as Record<string, unknown>) : null,
      usage: answered ? usageOf(outcome.prompt_tokens ?? 0, outcome.completion_tokens ?? 0, outcome.cost_usd ?? 0, outcome.latency_ms ?? 0) : null,
      ...(outcome.reason ? { reason: outcome.reason } : {}),
      replayed: false,
      prompt_version: prompt.version,
    };
  }

  private costOf(model: string, promptTokens: number, completionTokens: number): number {
    const cost = costOf(this.prices, model, promptTokens, completionTokens);
    if (cost !== undefined) return cost;
    if (!this.unpricedModels.has(model)) {
      this.unpricedModels.add(model);
      this.logger.warn({ event: 'ai.model_unpriced', model }, 'model has no price in AI_PRICE_TABLE; its cost counts as 0');
    }
    return 0;
  }
}

/** The outcome fields of a run that got no answer. */
const NO_CALL: Omit<RunOutcome, 'status' | 'reason'> = { output: null, raw_output: null, prompt_tokens: null, completion_tokens: null, cost_usd: null, latency_ms: null };

function usageOf(promptTokens: number, completionTokens: number, costUsd: number, latencyMs: number): AiUsage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens, cost_usd: costUsd, latency_ms: latencyMs };
}
