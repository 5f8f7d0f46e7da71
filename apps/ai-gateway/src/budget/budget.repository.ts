import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AiKind } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';

/** One organization's use of one kind in one month. */
export interface LedgerRow {
  kind: AiKind;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
}

/** A stored limit; null measures are unlimited. */
export interface LimitRow {
  kind: AiKind | '*';
  monthly_tokens: number | null;
  monthly_cost_usd: number | null;
}

/** What one provider call adds to the ledger. */
export interface LedgerEntry {
  organization_id: string;
  kind: AiKind;
  month: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
}

const toNumber = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const toNullableNumber = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** Every SQL statement of the budget ledger and its limits (DESIGN §4: ai-gateway owns both). */
@Injectable()
export class BudgetRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Usage of one kind in one month; zeros when nothing was recorded. */
  async usage(organizationId: string, kind: AiKind, month: string): Promise<LedgerRow> {
    const [row] = await this.dataSource.query(
      `SELECT kind, requests, prompt_tokens, completion_tokens, total_tokens, cost_usd
         FROM ai_budget_ledger WHERE organization_id = $1 AND kind = $2 AND month = $3`,
      [organizationId, kind, month],
    );
    return row ? ledgerRow(row) : { kind, requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost_usd: 0 };
  }

  /** Every kind's usage in one month. */
  async monthUsage(organizationId: string, month: string): Promise<LedgerRow[]> {
    const rows = await this.dataSource.query(
      `SELECT kind, requests, prompt_tokens, completion_tokens, total_tokens, cost_usd
         FROM ai_budget_ledger WHERE organization_id = $1 AND month = $2`,
      [organizationId, month],
    );
    return rows.map(ledgerRow);
  }

  /** The organization's limit for `kind`: its own row first, then its `*` row; undefined when neither exists. */
  async limitFor(organizationId: string, kind: AiKind): Promise<LimitRow | undefined> {
    // `kind = '*'` sorts false before true, so the kind's own row wins.
    const [row] = await this.dataSource.query(
      `SELECT kind, monthly_tokens, monthly_cost_usd FROM ai_budget_limits
        WHERE organization_id = $1 AND kind IN ($2, '*')
        ORDER BY kind = '*' LIMIT 1`,
      [organizationId, kind],
    );
    return row ? limitRow(row) : undefined;
  }

  /** Every limit row of an organization. */
  async limits(organizationId: string): Promise<LimitRow[]> {
    const rows = await this.dataSource.query(`SELECT kind, monthly_tokens, monthly_cost_usd FROM ai_budget_limits WHERE organization_id = $1`, [organizationId]);
    return rows.map(limitRow);
  }

  /** Sets a limit row (both measures null deletes it, so the config default applies again). */
  async setLimit(organizationId: string, limit: LimitRow): Promise<void> {
    if (limit.monthly_tokens === null && limit.monthly_cost_usd === null) {
      await this.dataSource.query(`DELETE FROM ai_budget_limits WHERE organization_id = $1 AND kind = $2`, [organizationId, limit.kind]);
      return;
    }
    await this.dataSource.query(
      `INSERT INTO ai_budget_limits (organization_id, kind, monthly_tokens, monthly_cost_usd) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, kind) DO UPDATE
         SET monthly_tokens = EXCLUDED.monthly_tokens, monthly_cost_usd = EXCLUDED.monthly_cost_usd, updated_at = clock_timestamp()`,
      [organizationId, limit.kind, limit.monthly_tokens, limit.monthly_cost_usd],
    );
  }

  /**
   * Adds one call to the month's row, creating it on first use. One upsert, so concurrent runs of
   * the same organization and kind add up instead of overwriting each other.
   */
  async record(tx: Tx, entry: LedgerEntry): Promise<void> {
    await tx.query(
      `INSERT INTO ai_budget_ledger (organization_id, kind, month, requests, prompt_tokens, completion_tokens, total_tokens, cost_usd)
       VALUES ($1, $2, $3, 1, $4, $5, $4::bigint + $5::bigint, $6)
       ON CONFLICT (organization_id, kind, month) DO UPDATE SET
         requests = ai_budget_ledger.requests + 1,
         prompt_tokens = ai_budget_ledger.prompt_tokens + EXCLUDED.prompt_tokens,
         completion_tokens = ai_budget_ledger.completion_tokens + EXCLUDED.completion_tokens,
         total_tokens = ai_budget_ledger.total_tokens + EXCLUDED.total_tokens,
         cost_usd = ai_budget_ledger.cost_usd + EXCLUDED.cost_usd,
         updated_at = clock_timestamp()`,
      [entry.organization_id, entry.kind, entry.month, entry.prompt_tokens, entry.completion_tokens, entry.cost_usd],
    );
  }
}

function ledgerRow(row: Record<string, unknown>): LedgerRow {
  return {
    kind: row.kind as AiKind,
    requests: toNumber(row.requests),
    prompt_tokens: toNumber(row.prompt_tokens),
    completion_tokens: toNumber(row.completion_tokens),
    total_tokens: toNumber(row.total_tokens),
    cost_usd: toNumber(row.cost_usd),
  };
}

function limitRow(row: Record<string, unknown>): LimitRow {
  return { kind: row.kind as AiKind | '*', monthly_tokens: toNullableNumber(row.monthly_tokens), monthly_cost_usd: toNullableNumber(row.monthly_cost_usd) };
}
