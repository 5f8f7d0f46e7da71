import { Injectable } from '@nestjs/common';
import type { ActionApprovedData, DecisionRequestedData } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** The bus payload each kind of run is enqueued from (`outreach.decision.requested`, `outreach.action.approved`). */
export interface RunInputs {
  decision: DecisionRequestedData;
  execution: ActionApprovedData;
}
export type RunKind = keyof RunInputs;

/** A run of kind `K`; its `input` is the payload of the event that caused it. */
export type RunRowOf<K extends RunKind> = RunColumns & { kind: K; input: RunInputs[K] };
export type RunRow = { [K in RunKind]: RunRowOf<K> }[RunKind];

interface RunColumns {
  id: string;
  run_key: string;
  organization_id: string;
  subject_id: string;
  status: 'queued' | 'running' | 'done' | 'failed';
  attempts: number;
  run_after: Date;
  lease_until: Date | null;
  fence: number;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

/**
 * The runner tables: a run per cause (its event id is the run key, so a redelivered event adds
 * nothing) and a memo row per (run key, step).
 */
@Injectable()
export class RunsRepository {
  /** Records a run; a run key seen before is a no-op. Returns whether it was new. */
  async enqueue(db: Queryable, r: { run_key: string; organization_id: string; subject_id: string; now: Date } & Pick<RunRow, 'kind' | 'input'>): Promise<boolean> {
    const rows = await rowsOf<{ id: string }>(
      db,
      `INSERT INTO workflow_runs (run_key, kind, organization_id, subject_id, input, status, run_after, created_at)
       VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6) ON CONFLICT (run_key) DO NOTHING RETURNING id`,
      [r.run_key, r.kind, r.organization_id, r.subject_id, JSON.stringify(r.input), r.now],
    );
    return rows.length > 0;
  }

  /**
   * Claims the next ready run: queued and due, or running with a lapsed lease (its runner died).
   * Decision runs obey the per-organization concurrency key: a run is skipped while its
   * organization already has `decisionLimit` decision runs holding live leases. Claims take one
   * global transaction-scoped advisory lock so that count is exact across replicas (a claim is a
   * few milliseconds; the work runs outside it). The fence goes up on every claim.
   */
  async claim(db: Queryable, now: Date, leaseMs: number, decisionLimit: number): Promise<RunRow | null> {
    await db.query(`SELECT pg_advisory_xact_lock(hashtext('outreach:run-claim'))`);
    const [row] = await rowsOf<RunRow>(
      db,
      `UPDATE workflow_runs SET status = 'running', attempts = attempts + 1, fence = fence + 1, lease_until = $1::timestamptz + ($2 || ' milliseconds')::interval
        WHERE id = (
          SELECT r.id FROM workflow_runs r
           WHERE r.status IN ('queued', 'running') AND r.run_after <= $1
             AND (r.status = 'queued' OR r.lease_until < $1)
             AND (r.kind <> 'decision' OR (
                   SELECT count(*) FROM workflow_runs x
                    WHERE x.organization_id = r.organization_id AND x.kind = 'decision' AND x.status = 'running' AND x.lease_until >= $1) < $3)
           ORDER BY r.run_after, r.created_at
           LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING *`,
      [now, String(leaseMs), decisionLimit],
    );
    return row ?? null;
  }

  /** Ends a run this runner still holds (fence); false when the lease was taken over. */
  async finish(db: Queryable, id: string, fence: number, status: 'done' | 'failed', error: string | null, now: Date): Promise<boolean> {
    const rows = await rowsOf<{ id: string }>(db, `UPDATE workflow_runs SET status = $3, last_error = $4, finished_at = $5, lease_until = NULL WHERE id = $1 AND fence = $2 AND status = 'running' RETURNING id`, [id, fence, status, error, now]);
    return rows.length > 0;
  }

  /** Extends the lease of a run this runner still holds (fence) to `leaseUntil`; false when it was taken over or ended. */
  async renew(db: Queryable, id: string, fence: number, leaseUntil: Date): Promise<boolean> {
    const rows = await rowsOf<{ id: string }>(db, `UPDATE workflow_runs SET lease_until = $3 WHERE id = $1 AND fence = $2 AND status = 'running' RETURNING id`, [id, fence, leaseUntil]);
    return rows.length > 0;
  }

  /** Gives a failed attempt back to the queue, to run again at `runAfter`. */
  async retryLater(db: Queryable, id: string, fence: number, runAfter: Date, error: string): Promise<boolean> {
    const rows = await rowsOf<{ id: string }>(db, `UPDATE workflow_runs SET status = 'queued', run_after = $3, last_error = $4, lease_until = NULL WHERE id = $1 AND fence = $2 AND status = 'running' RETURNING id`, [id, fence, runAfter, error]);
    return rows.length > 0;
  }

  async memo(db: Queryable, runKey: string, step: string): Promise<{ output: unknown } | null> {
    const [row] = await rowsOf<{ output: unknown }>(db, `SELECT output FROM workflow_steps WHERE run_key = $1 AND step = $2`, [runKey, step]);
    return row ?? null;
  }

  /** Saves a step's output; the first writer wins, and the stored output is returned. */
  async saveMemo(db: Queryable, runKey: string, step: string, output: unknown, now: Date): Promise<unknown> {
    const rows = await rowsOf<{ output: unknown }>(db, `INSERT INTO workflow_steps (run_key, step, output, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (run_key, step) DO NOTHING RETURNING output`, [runKey, step, JSON.stringify(output ?? null), now]);
    if (rows.length) return rows[0]!.output;
    return (await this.memo(db, runKey, step))!.output;
  }

  /** Serialises two runners on one step of one run (a transaction-scoped advisory lock). */
  async lockStep(db: Queryable, runKey: string, step: string): Promise<void> {
    await db.query(`SELECT pg_advisory_xact_lock(hashtext('outreach:step:' || $1 || ':' || $2))`, [runKey, step]);
  }

  async find(db: Queryable, runKey: string): Promise<RunRow | null> {
    const [row] = await rowsOf<RunRow>(db, `SELECT * FROM workflow_runs WHERE run_key = $1`, [runKey]);
    return row ?? null;
  }
}
