import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AiKind, AiRunStatus } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';

/** An `ai_runs` row as the service reads it. */
export interface RunRow {
  id: string;
  organization_id: string;
  idempotency_key: string;
  kind: AiKind;
  status: AiRunStatus | 'running';
  /** Fence: bumped by each take-over; only the holder of the current value may finish the run. */
  attempt: number;
  /** True while `running` with its lease past (the owner is presumed dead). */
  lease_expired: boolean;
  prompt_version: string;
  input_sha256: string;
  model: string | null;
  output: Record<string, unknown> | null;
  reason: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  cost_usd: number | null;
  latency_ms: number | null;
}

/** What a run writes when it settles. */
export interface RunOutcome {
  status: AiRunStatus;
  output: unknown;
  raw_output: string | null;
  reason: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost_usd: number | null;
  latency_ms: number | null;
}

/** Identity and prompt of a run being claimed. */
export interface RunClaim {
  organization_id: string;
  idempotency_key: string;
  kind: AiKind;
  prompt_version: string;
  input_sha256: string;
  model: string;
  /** Lease length from now, ms: the deadline of the call plus a margin. */
  lease_ms: number;
}

const COLUMNS = `id, organization_id, idempotency_key, kind, status, attempt,
  (status = 'running' AND lease_expires_at < clock_timestamp()) AS lease_expired,
  prompt_version, input_sha256, model, output, reason, prompt_tokens, completion_tokens, total_tokens, cost_usd, latency_ms`;

/** Every SQL statement of `ai_runs`. Lease times use the database clock, the one clock all replicas share. */
@Injectable()
export class RunsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Inserts the run as `running` under its unique (organization, key), or reads the row that holds
   * the key. The insert is the claim: of two concurrent requests exactly one inserts, so only one
   * calls the model; the other waits for the row to settle.
   */
  async claim(claim: RunClaim): Promise<{ owned: boolean; run: RunRow }> {
    for (;;) {
      const inserted: Record<string, unknown>[] = await this.dataSource.query(
        `INSERT INTO ai_runs (organization_id, idempotency_key, kind, status, prompt_version, input_sha256, model, lease_expires_at)
         VALUES ($1, $2, $3, 'running', $4, $5, $6, clock_timestamp() + $7 * interval '1 millisecond')
         ON CONFLICT (organization_id, idempotency_key) DO NOTHING
         RETURNING ${COLUMNS}`,
        [claim.organization_id, claim.idempotency_key, claim.kind, claim.prompt_version, claim.input_sha256, claim.model, claim.lease_ms],
      );
      if (inserted[0]) return { owned: true, run: runRow(inserted[0]) };
      const existing = await this.find(claim.organization_id, claim.idempotency_key);
      // Rows are never deleted while a key can repeat, so this only loops on a racing delete.
      if (existing) return { owned: false, run: existing };
    }
  }

  /** The run holding (organization, key), if any. */
  async find(organizationId: string, idempotencyKey: string): Promise<RunRow | undefined> {
    const [row] = await this.dataSource.query(`SELECT ${COLUMNS} FROM ai_runs WHERE organization_id = $1 AND idempotency_key = $2`, [organizationId, idempotencyKey]);
    return row ? runRow(row) : undefined;
  }

  /**
   * Takes over a `running` run whose lease expired (its owner died mid-call), bumping the fence so
   * a late finish by the old owner is refused. Undefined when the run settled or someone else took it.
   */
  async takeOver(run: RunRow, claim: RunClaim): Promise<RunRow | undefined> {
    const [row] = updatedRows(
      await this.dataSource.query(
        `UPDATE ai_runs
          SET attempt = attempt + 1, lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond',
              prompt_version = $4, input_sha256 = $5, model = $6
        WHERE id = $1 AND attempt = $2 AND status = 'running' AND lease_expires_at < clock_timestamp()
        RETURNING ${COLUMNS}`,
        [run.id, run.attempt, claim.lease_ms, claim.prompt_version, claim.input_sha256, claim.model],
      ),
    );
    return row ? runRow(row) : undefined;
  }

  /**
   * Settles a run, fenced on `attempt` and `running`: a holder that lost its lease to a take-over
   * writes nothing. Returns whether the row was written.
   */
  async finish(tx: Tx, run: RunRow, outcome: RunOutcome): Promise<boolean> {
    const total = outcome.prompt_tokens === null && outcome.completion_tokens === null ? null : (outcome.prompt_tokens ?? 0) + (outcome.completion_tokens ?? 0);
    const rows = updatedRows(
      await tx.query(
        `UPDATE ai_runs
          SET status = $3, output = $4::jsonb, raw_output = $5, reason = $6, prompt_tokens = $7, completion_tokens = $8,
              total_tokens = $9, cost_usd = $10, latency_ms = $11, lease_expires_at = NULL, finished_at = clock_timestamp()
        WHERE id = $1 AND attempt = $2 AND status = 'running'
        RETURNING id`,
        [run.id, run.attempt, outcome.status, outcome.output === null || outcome.output === undefined ? null : JSON.stringify(outcome.output), outcome.raw_output, outcome.reason, outcome.prompt_tokens, outcome.completion_tokens, total, outcome.cost_usd, outcome.latency_ms],
      ),
    );
    return rows.length === 1;
  }
}

/** TypeORM answers an UPDATE … RETURNING with `[rows, rowCount]` (an INSERT or SELECT with the rows). */
function updatedRows(result: unknown): Record<string, unknown>[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0];
  return result as Record<string, unknown>[];
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function runRow(row: Record<string, unknown>): RunRow {
  return {
    id: row.id as string,
    organization_id: row.organization_id as string,
    idempotency_key: row.idempotency_key as string,
    kind: row.kind as AiKind,
    status: row.status as RunRow['status'],
    attempt: Number(row.attempt),
    lease_expired: row.lease_expired === true,
    prompt_version: row.prompt_version as string,
    input_sha256: row.input_sha256 as string,
    model: (row.model as string | null) ?? null,
    output: (row.output as Record<string, unknown> | null) ?? null,
    reason: (row.reason as string | null) ?? null,
    prompt_tokens: num(row.prompt_tokens),
    completion_tokens: num(row.completion_tokens),
    total_tokens: num(row.total_tokens),
    cost_usd: num(row.cost_usd),
    latency_ms: num(row.latency_ms),
  };
}
