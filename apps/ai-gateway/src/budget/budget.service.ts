import { Inject, Injectable } from '@nestjs/common';
import { AI_KINDS, type AiBudgetLimit, type AiBudgetView, type AiKind } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { APP_CONFIG } from '@touchpoint/runtime';
import type { AiGatewayConfig } from '../ai-gateway.config.js';
import { BudgetRepository, type LedgerEntry } from './budget.repository.js';

/** The limit in force for one organization and kind; null measures are unlimited. */
export interface EffectiveLimit {
  monthly_tokens: number | null;
  monthly_cost_usd: number | null;
  source: 'kind' | 'organization' | 'default';
}

/** Whether a run may call the model. */
export type BudgetVerdict = { allowed: true } | { allowed: false; reason: string };

/**
 * The budget ledger per organization × kind × calendar month (UTC), and its limits (seed 000,
 * "Model unavailable / budget exhausted → template or skip"). A limit reached refuses the call
 * before it is made. Concurrent runs may each pass the check, so a month can end one call's worth
 * over its limit: the usage of a call is only known after it.
 */
@Injectable()
export class BudgetService {
  constructor(
    private readonly repository: BudgetRepository,
    @Inject(APP_CONFIG) private readonly config: AiGatewayConfig,
  ) {}

  /** The limit of `kind` for the organization: its row, its `*` row, else the config default (0 = none). */
  async limitFor(organizationId: string, kind: AiKind): Promise<EffectiveLimit> {
    const row = await this.repository.limitFor(organizationId, kind);
    if (row) return { monthly_tokens: row.monthly_tokens, monthly_cost_usd: row.monthly_cost_usd, source: row.kind === '*' ? 'organization' : 'kind' };
    return {
      monthly_tokens: this.config.AI_BUDGET_DEFAULT_MONTHLY_TOKENS || null,
      monthly_cost_usd: this.config.AI_BUDGET_DEFAULT_MONTHLY_COST_USD || null,
      source: 'default',
    };
  }

  /** Refuses when this month's tokens or cost already reached the limit. */
  async check(organizationId: string, kind: AiKind, month: string): Promise<BudgetVerdict> {
    const [limit, used] = await Promise.all([this.limitFor(organizationId, kind), this.repository.usage(organizationId, kind, month)]);
    if (limit.monthly_tokens !== null && used.total_tokens >= limit.monthly_tokens) {
      return { allowed: false, reason: `monthly token limit reached for ${kind} in ${month}: ${used.total_tokens} of ${limit.monthly_tokens}` };
    }
    if (limit.monthly_cost_usd !== null && used.cost_usd >= limit.monthly_cost_usd) {
      return { allowed: false, reason: `monthly cost limit reached for ${kind} in ${month}: ${used.cost_usd} of ${limit.monthly_cost_usd} USD` };
    }
    return { allowed: true };
  }

  /** Adds one provider call to the ledger inside the run's finishing transaction. */
  record(tx: Tx, entry: LedgerEntry): Promise<void> {
    return this.repository.record(tx, entry);
  }

  /** Usage and limits of every kind for one month (`YYYY-MM`, UTC). */
  async view(organizationId: string, month: string): Promise<AiBudgetView> {
    const used = new Map((await this.repository.monthUsage(organizationId, month)).map((r) => [r.kind, r]));
    const kinds = await Promise.all(
      AI_KINDS.map(async (kind) => {
        const u = used.get(kind);
        const limit = await this.limitFor(organizationId, kind);
        return {
          kind,
          requests: u?.requests ?? 0,
          prompt_tokens: u?.prompt_tokens ?? 0,
          completion_tokens: u?.completion_tokens ?? 0,
          total_tokens: u?.total_tokens ?? 0,
          cost_usd: u?.cost_usd ?? 0,
          limit_tokens: limit.monthly_tokens,
          limit_cost_usd: limit.monthly_cost_usd,
        };
      }),
    );
    return { organization_id: organizationId, month, kinds };
  }

  /** Stores an organization's limit for a kind (or `*`); both measures null removes it. */
  async setLimit(limit: AiBudgetLimit): Promise<AiBudgetLimit> {
    await this.repository.setLimit(limit.organization_id, { kind: limit.kind, monthly_tokens: limit.monthly_tokens, monthly_cost_usd: limit.monthly_cost_usd });
    return limit;
  }
}
