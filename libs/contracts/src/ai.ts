import { ErrorCode } from '@touchpoint/errors';
import type { ServiceName } from './services.js';
import type { RpcAnswer, RpcPattern, RpcRequest } from './wire.js';

/**
 * Contract of the ai-gateway service (DESIGN §4, §6: "Agno agent run" → `ai.run`). Every model call
 * in Touchpoint goes through `ai.run`; no other service imports a model SDK.
 *
 * Rules behind it: one turn, no tools, JSON asked for, the answer checked after the call and never
 * retried automatically (seed 003 §4.3–4.4); a budget ledger per organization and kind, and an AI
 * failure makes the caller fall back to a template or skip (seed 000, "Failure behaviour").
 */

/** RPC patterns answered by ai-gateway. */
export const AiRpc = {
  /** `AiRunRequest` → `AiRunResult`. */
  Run: 'ai.run',
  /** `AiBudgetQuery` → `AiBudgetView`: this month's usage and limits of one organization. */
  BudgetGet: 'ai.budget.get',
  /** `AiBudgetLimitInput` → `AiBudgetLimit`: sets (or clears, with nulls) a monthly limit. */
  BudgetSetLimit: 'ai.budget.set_limit',
} as const;

/** What a run is for; each kind has one versioned prompt template in ai-gateway. */
export const AI_KINDS = ['followup_classify', 'followup_message', 'outreach_decide', 'outreach_draft_email', 'outreach_draft_linkedin', 'conversation_summary', 'promise_resume'] as const;
export type AiKind = (typeof AI_KINDS)[number];

/**
 * Outcome of a run. Only `ok` carries an output; every other status means "fall back as your spec
 * says" (template, skip, decision error, retry later).
 * - `invalid_output`: the model answered but not with a JSON object holding the required fields.
 * - `unavailable`: no model configured, the provider failed (HTTP error, network), or ai-gateway
 *   itself could not be reached (then `run_id` is null).
 * - `timeout`: the provider did not answer within `timeout_ms`.
 * - `budget_exhausted`: the organization's monthly limit for this kind is used up; no call made.
 */
export const AI_RUN_STATUSES = ['ok', 'invalid_output', 'unavailable', 'timeout', 'budget_exhausted'] as const;
export type AiRunStatus = (typeof AI_RUN_STATUSES)[number];

/** JSON types a required output field may be checked against (`integer` = a whole number). */
export const AI_FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object'] as const;
export type AiFieldType = (typeof AI_FIELD_TYPES)[number];

/**
 * What the caller requires of the answer: field name → JSON type. Only these are checked; extra
 * fields pass through untouched (seed 003 §4.3, NextAction: the post-check owns every strict rule).
 */
export interface AiOutputSchema {
  required: Record<string, AiFieldType>;
}

/** One message of a conversation as given to a prompt. */
export interface AiThreadMessage {
  /** ISO-8601 instant the message was sent or received. */
  at?: string;
  direction: 'inbound' | 'outbound';
  /** `whatsapp`, `email`, `linkedin`, … */
  channel?: string;
  text: string;
}

/** What a prompt may know about the contact (all tenant data). */
export interface AiContact {
  name?: string;
  /** BCP-47 tag the answer should be written in, e.g. `pt-BR`. */
  language?: string;
  /** Extra facts by name (custom fields), rendered as `name: value` lines. */
  facts?: Record<string, string>;
}

/** `followup_classify`: which of the flow's classes the newest reply belongs to. */
export interface FollowupClassifyInput {
  /** The reply to classify (newest inbound text). */
  reply: string;
  /** The classes of the `ai_classify` node (seed 002), in the author's order. */
  classes: { id: string; description?: string }[];
  /** Earlier messages, newest first. */
  thread?: AiThreadMessage[];
  /** The flow author's extra instruction for this node (tenant data, shown as data). */
  guidance?: string;
}

/** `followup_message`: an AI-written follow-up message (seed 000, AI step). */
export interface FollowupMessageInput {
  /** What this message must achieve, from the flow step. */
  objective: string;
  contact?: AiContact;
  /** Who is writing: the business and its offer. */
  business?: string;
  /** Earlier messages, newest first. */
  thread?: AiThreadMessage[];
  /** Longest acceptable body, characters. */
  max_chars?: number;
}

/**
 * The outreach context sections (seed 003 §4.2), each already cut to its cap by the outreach
 * context builder; ai-gateway escapes them and wraps each in its tag.
 */
export interface OutreachContextSections {
  campaign: string;
  person?: string;
  company?: string;
  signals?: string;
  /** Rendered thread lines, newest first (`[email] 2026-10-27 inbound: …`). */
  thread?: string;
  /** Earlier decisions, actions and reject reasons. */
  history?: string;
  dossier?: string;
  knowledge?: string;
  /** Names of the sections whose read failed (shown to the model as missing). */
  missing?: string[];
}

/** `outreach_decide`: the next action for one enrollment (seed 003 §4.3). */
export interface OutreachDecideInput {
  context: OutreachContextSections;
  /**
   * Why this decision runs (`enrolled`, `followup_due`, `reply_received`, …) and its ref.
   * `first_touch`: nothing was decided or sent for the person yet (an enrolled run, or a
   * `followup_due` that a pause kept from its enrolled run, seed 003 §4.7): the action opens the
   * conversation.
   */
  trigger: { reason: string; ref?: string; first_touch?: boolean };
  /** Computed by code before the call; the model may only choose from these. */
  allowed_actions: string[];
}

/** `outreach_draft_email`: the email specialist (seed 003 §4.4). */
export interface OutreachDraftEmailInput {
  context: OutreachContextSections;
  objective: string;
  /** A reply answers the newest message and has no subject. */
  is_reply: boolean;
}

/** `outreach_draft_linkedin`: the LinkedIn specialist (seed 003 §4.4). */
export interface OutreachDraftLinkedinInput {
  context: OutreachContextSections;
  type: 'linkedin_connection' | 'linkedin_message';
  objective: string;
}

/** `conversation_summary`: the summary of a closed conversation instance (seed 004). */
export interface ConversationSummaryInput {
  /** The instance's messages, oldest first. */
  messages: AiThreadMessage[];
  contact?: AiContact;
}

/** `promise_resume`: the agent picks up a one-off return ("promise", seed 002). */
export interface PromiseResumeInput {
  /** What was promised. */
  promise: string;
  /** Why the return was scheduled. */
  reason?: string;
  /** ISO-8601 instant the return was promised for. */
  promised_at?: string;
  contact?: AiContact;
  business?: string;
  /** Earlier messages, newest first. */
  thread?: AiThreadMessage[];
}

/** The prompt inputs of each kind. */
export interface AiInputByKind {
  followup_classify: FollowupClassifyInput;
  followup_message: FollowupMessageInput;
  outreach_decide: OutreachDecideInput;
  outreach_draft_email: OutreachDraftEmailInput;
  outreach_draft_linkedin: OutreachDraftLinkedinInput;
  conversation_summary: ConversationSummaryInput;
  promise_resume: PromiseResumeInput;
}

/** `ai.run` request. */
export interface AiRunRequest<K extends AiKind = AiKind> {
  organization_id: string;
  kind: K;
  /**
   * Names the cause (1–200 chars): the same (organization, key) returns the stored result and never
   * calls the model again, whatever the input. A new attempt needs a new key.
   */
  idempotency_key: string;
  input: AiInputByKind[K];
  output_schema: AiOutputSchema;
  /** Provider deadline, ms (default `AI_DEFAULT_TIMEOUT_MS`, at most `AI_MAX_TIMEOUT_MS`). */
  timeout_ms?: number;
}

/** Tokens, cost and time of the one provider call of a run. */
export interface AiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** From the price table of ai-gateway's config; 0 for a model it has no price for. */
  cost_usd: number;
  /** Time of the provider call, ms. */
  latency_ms: number;
}

/** `ai.run` answer. */
export interface AiRunResult<O = Record<string, unknown>> {
  /** Id of the `ai_runs` row; null only when ai-gateway could not be reached. */
  run_id: string | null;
  status: AiRunStatus;
  /** The parsed JSON object when `status` is `ok`; null otherwise. */
  output: O | null;
  /** Null when no provider call was made (or none answered). */
  usage: AiUsage | null;
  /** Why the status is not `ok`, in words (e.g. `missing required field "type"`). */
  reason?: string;
  /** True when this answer is the stored result of an earlier request with the same key. */
  replayed?: boolean;
  /** `<kind>@<n>` of the prompt template used. */
  prompt_version?: string;
}

/** `ai.budget.get` request; `month` is `YYYY-MM` (UTC), default the current month. */
export interface AiBudgetQuery {
  organization_id: string;
  month?: string;
}

/** A monthly limit; null means "no limit" for that measure. `kind` `*` applies to every kind without its own row. */
export interface AiBudgetLimit {
  organization_id: string;
  kind: AiKind | '*';
  monthly_tokens: number | null;
  monthly_cost_usd: number | null;
}

/** `ai.budget.set_limit` request. */
export type AiBudgetLimitInput = AiBudgetLimit;

/** `ai.budget.get` answer: usage and the limit in force per kind for one month. */
export interface AiBudgetView {
  organization_id: string;
  month: string;
  kinds: {
    kind: AiKind;
    requests: number;
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    cost_usd: number;
    limit_tokens: number | null;
    limit_cost_usd: number | null;
  }[];
}

/** Provider deadline used when a request names none, ms. */
export const AI_DEFAULT_TIMEOUT_MS = 20_000;
/** Longest provider deadline a request may ask for, ms. */
export const AI_MAX_TIMEOUT_MS = 120_000;
/**
 * Added to `timeout_ms` for the RPC deadline: the budget check, the run's writes and a short wait
 * behind a concurrent request with the same key fit in it.
 */
export const AI_RPC_DEADLINE_MARGIN_MS = 5_000;

/**
 * Output schemas matching each kind's prompt (the fields the template asks for and the caller's
 * spec cannot do without). Callers may pass their own.
 */
export const AI_DEFAULT_OUTPUT_SCHEMAS: Record<AiKind, AiOutputSchema> = {
  followup_classify: { required: { class: 'string', confidence: 'number' } },
  followup_message: { required: { body: 'string' } },
  // Seed 003 §4.3: NextAction requires only type and rationale, both strings.
  outreach_decide: { required: { type: 'string', rationale: 'string' } },
  // Seed 003 §4.4: the specialists' schema holds only optional strings; the draft check owns limits.
  outreach_draft_email: { required: {} },
  outreach_draft_linkedin: { required: {} },
  conversation_summary: { required: { summary: 'string' } },
  promise_resume: { required: { body: 'string' } },
};

/** The one method of `RpcClient` (libs/runtime) that `AiClient` needs. */
export interface AiRpcCaller {
  call<P extends RpcPattern>(service: ServiceName, pattern: P, data: RpcRequest<P>, timeoutMs?: number): Promise<RpcAnswer<P>>;
}

/**
 * Typed client of `ai.run` for the services that need a model (followups, outreach, messaging):
 * `new AiClient(rpcClient).run({...})`.
 *
 * The RPC deadline is `timeout_ms + AI_RPC_DEADLINE_MARGIN_MS`. When ai-gateway cannot be reached in
 * time (RpcClient's `service_unavailable`), `run` resolves with `status: 'unavailable'` and
 * `run_id: null` instead of throwing, so every caller has one fallback path (seed 000: AI failure →
 * template or skip). A retry with the same key later returns whatever the gateway stored.
 * @throws AppError validation_failed when the request is malformed (a bug in the caller)
 */
export class AiClient {
  constructor(private readonly rpc: AiRpcCaller) {}

  async run<K extends AiKind, O = Record<string, unknown>>(request: AiRunRequest<K>): Promise<AiRunResult<O>> {
    const timeoutMs = request.timeout_ms ?? AI_DEFAULT_TIMEOUT_MS;
    try {
      // ai-gateway checked `output` against the request's `output_schema`; `O` is the caller's name for that shape.
      return (await this.rpc.call('ai-gateway', AiRpc.Run, { ...request, timeout_ms: timeoutMs }, timeoutMs + AI_RPC_DEADLINE_MARGIN_MS)) as AiRunResult<O>;
    } catch (err) {
      if ((err as { code?: unknown })?.code === ErrorCode.ServiceUnavailable) {
        return { run_id: null, status: 'unavailable', output: null, usage: null, reason: 'ai_gateway_unreachable' };
      }
      throw err;
    }
  }
}
