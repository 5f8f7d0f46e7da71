import { ConfigError, IsInt, IsString, Matches, Max, Min, Secret, ServiceConfig } from '@touchpoint/config';
import type { AiKind } from '@touchpoint/contracts';
import { IsJSON, IsNumber } from 'class-validator';
import { type PriceTable, parsePriceTable } from './budget/price-table.js';

/** Values of `AI_BASE_URL` that mean "no model configured": every run answers `unavailable` at once. */
const NO_MODEL_VALUES = new Set(['', 'none', 'off', 'disabled']);

/** Environment of the ai-gateway service; see libs/config for the shared variables. */
export class AiGatewayConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  override PORT = 3106;

  /**
   * Base URL of an OpenAI-compatible chat-completions API (OpenAI, Azure OpenAI, Ollama, vLLM), up
   * to and including `/v1`. `none` means no model: runs answer `unavailable` without a network call
   * (an empty variable keeps this default, as for every variable; see libs/config).
   */
  @Matches(/^(none|off|disabled|https?:\/\/\S+)$/, { message: 'must be an http(s) URL or none' })
  AI_BASE_URL = 'http://127.0.0.1:3900/v1';

  /**
   * Bearer key of the provider; the sandbox accepts any. Never logged. A provider without keys
   * (Ollama) takes any value you set; with no model (`AI_BASE_URL=none`) it is not needed.
   */
  @IsString()
  @Secret((config: AiGatewayConfig) => !config.modelConfigured)
  AI_API_KEY = 'sandbox-key';

  /** Model of every kind without an override below. */
  @IsString()
  @Matches(/^\S+$/, { message: 'must be a model name' })
  AI_MODEL_DEFAULT = 'sandbox-model';

  // Per-kind overrides; empty means AI_MODEL_DEFAULT.
  @IsString() AI_MODEL_FOLLOWUP_CLASSIFY = '';
  @IsString() AI_MODEL_FOLLOWUP_MESSAGE = '';
  @IsString() AI_MODEL_OUTREACH_DECIDE = '';
  @IsString() AI_MODEL_OUTREACH_DRAFT_EMAIL = '';
  @IsString() AI_MODEL_OUTREACH_DRAFT_LINKEDIN = '';
  @IsString() AI_MODEL_CONVERSATION_SUMMARY = '';
  @IsString() AI_MODEL_PROMISE_RESUME = '';

  /** `max_tokens` sent with each call; 0 sends none (the provider's default applies). */
  @IsInt()
  @Min(0)
  @Max(200_000)
  AI_MAX_OUTPUT_TOKENS = 1024;

  /**
   * Price per million tokens by model, USD:
   * `{"<model>": {"input_usd_per_mtok": n, "output_usd_per_mtok": n}}`. A model missing here costs 0
   * (and is logged once), so set it for every model you use; token limits still apply.
   */
  @IsJSON()
  AI_PRICE_TABLE = JSON.stringify({
    'sandbox-model': { input_usd_per_mtok: 1, output_usd_per_mtok: 2 },
  });

  /** Monthly token limit per organization and kind when the organization has no row in `ai_budget_limits`; 0 = none. */
  @IsInt()
  @Min(0)
  AI_BUDGET_DEFAULT_MONTHLY_TOKENS = 5_000_000;

  /** Monthly cost limit per organization and kind (USD) when the organization has no row; 0 = none. */
  @IsNumber()
  @Min(0)
  AI_BUDGET_DEFAULT_MONTHLY_COST_USD = 0;

  /**
   * Added to a run's `timeout_ms` to form its lease, ms: a concurrent request with the same key waits
   * at most this long past the deadline before it takes the run over (the owner is presumed dead).
   */
  @IsInt()
  @Min(100)
  @Max(60_000)
  AI_LEASE_MARGIN_MS = 3000;

  /** Whether a model is configured at all. */
  get modelConfigured(): boolean {
    return !NO_MODEL_VALUES.has(this.AI_BASE_URL.trim().toLowerCase());
  }

  /** The model used for `kind`. */
  modelFor(kind: AiKind): string {
    const override = (this as unknown as Record<string, string>)[`AI_MODEL_${kind.toUpperCase()}`];
    return override?.trim() ? override.trim() : this.AI_MODEL_DEFAULT;
  }

  /** The parsed price table (validated at start-up by `assertAiConfig`). */
  get priceTable(): PriceTable {
    return parsePriceTable(this.AI_PRICE_TABLE);
  }
}

/**
 * Checks what class-validator cannot: the shape of the price table.
 * @throws ConfigError naming AI_PRICE_TABLE
 */
export function assertAiConfig(config: AiGatewayConfig): void {
  try {
    parsePriceTable(config.AI_PRICE_TABLE);
  } catch (err) {
    throw new ConfigError(['AI_PRICE_TABLE'], `AI_PRICE_TABLE: ${(err as Error).message}`);
  }
}
