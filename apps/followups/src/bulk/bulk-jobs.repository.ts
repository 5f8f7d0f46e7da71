import { Injectable } from '@nestjs/common';
import type { BulkJobStatus } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';
import type { Segment } from '../rules/segment-sql.js';

/** A row of `bulk_jobs`. */
export interface BulkJobRow {
  id: string;
  organization_id: string;
  flow_id: string;
  operation_key: string;
  source: { kind: 'list' | 'segment'; segment?: Segment };
  contact_ids: string[];
  total: number;
  cursor: number;
  enrolled: number;
  rejected: Record<string, number>;
  status: BulkJobStatus;
  lease_token: string | null;
  locked_until: Date | null;
  last_error: string | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/** What a claim of the next open job answered. */
export interface BulkClaim {
  id: string;
  organization_id: string;
  /** `failed` when this claim was one more than the attempts allowed. */
  status: BulkJobStatus;
  attempts: number;
  last_error: string | null;
}

/**
 * Every SQL statement of bulk enrollment jobs (seed 000 "followup_bulk_jobs"). A job is worked by
 * whoever holds its lease (`lease_token`, `locked_until`); every write after the claim is fenced
 * on that token.
 */
@Injectable()
export class BulkJobsRepository {
  async findByOperationKey(db: Queryable, organizationId: string, operationKey: string): Promise<BulkJobRow | undefined> {
    const [row] = await rowsOf<BulkJobRow>(db, `SELECT * FROM bulk_jobs WHERE organization_id = $1 AND operation_key = $2`, [organizationId, operationKey]);
    return row;
  }

  async find(db: Queryable, organizationId: string, jobId: string): Promise<BulkJobRow | undefined> {
    const [row] = await rowsOf<BulkJobRow>(db, `SELECT * FROM bulk_jobs WHERE id = $1 AND organization_id = $2`, [jobId, organizationId]);
    return row;
  }

  /**
   * The contact ids a compiled segment matches now, at most `limit`, erased contacts never
   * (`where` and `params` from `compileSegment`, whose `$1` is the organization and `$2` the limit).
   */
  async segmentContactIds(db: Queryable, where: string, params: unknown[]): Promise<string[]> {
    const rows = await rowsOf<{ contact_id: string }>(db, `SELECT c.contact_id FROM contacts c WHERE c.organization_id = $1 AND c.erased_at IS NULL AND (${where}) ORDER BY c.contact_id LIMIT $2`, params);
    return rows.map((r) => r.contact_id);
  }

  /** Inserts a job; undefined when another request inserted one with the same operation key first. */
  async insert(db: Queryable, j: { id: string; organizationId: string; flowId: string; operationKey: string; source: { kind: 'list' } | { kind: 'segment'; segment: Segment }; contactIds: string[]; status: BulkJobStatus; now: Date }): Promise<BulkJobRow | undefined> {
    const [inserted] = await rowsOf<BulkJobRow>(
      db,
      `INSERT INTO bulk_jobs (id, organization_id, flow_id, operation_key, source, contact_ids, total, status, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::uuid[], $7, $8, $9, $9)
       ON CONFLICT (organization_id, operation_key) DO NOTHING RETURNING *`,
      [j.id, j.organizationId, j.flowId, j.operationKey, JSON.stringify(j.source), j.contactIds, j.contactIds.length, j.status, j.now],
    );
    return inserted;
  }

  /**
   * Claims the oldest open job whose lease is free or ran out (SKIP LOCKED: two workers never
   * claim one job), counting one attempt: past `maxAttempts` the job ends `failed` instead, keeping
   * its last error or `gaveUp`. Undefined when no job is open.
   */
  async claimNext(db: Queryable, c: { now: Date; token: string; lockedUntil: Date; maxAttempts: number; gaveUp: string }): Promise<BulkClaim | undefined> {
    const [row] = await rowsOf<BulkClaim>(
      db,
      `UPDATE bulk_jobs SET attempts = attempts + 1, updated_at = $1,
              status = CASE WHEN attempts + 1 > $4 THEN 'failed' ELSE 'running' END,
              lease_token = CASE WHEN attempts + 1 > $4 THEN NULL ELSE $2::uuid END,
              locked_until = CASE WHEN attempts + 1 > $4 THEN NULL ELSE $3::timestamptz END,
              finished_at = CASE WHEN attempts + 1 > $4 THEN $1::timestamptz ELSE finished_at END,
              last_error = CASE WHEN attempts + 1 > $4 THEN coalesce(last_error, $5) ELSE last_error END
        WHERE id = (SELECT id FROM bulk_jobs WHERE status IN ('pending', 'running') AND (locked_until IS NULL OR locked_until <= $1)
                     ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING id, organization_id, status, attempts, last_error`,
      [c.now, c.token, c.lockedUntil, c.maxAttempts, c.gaveUp],
    );
    return row;
  }

  /** The running job this lease still holds, locked for the chunk; undefined when the lease moved on. */
  async lockLeased(db: Queryable, jobId: string, token: string): Promise<BulkJobRow | undefined> {
    const [job] = await rowsOf<BulkJobRow>(db, `SELECT * FROM bulk_jobs WHERE id = $1 AND lease_token = $2 AND status = 'running' FOR UPDATE`, [jobId, token]);
    return job;
  }

  /**
   * Records a chunk that went through: the cursor, the counts, a renewed lease (or, when `done`,
   * `completed` with no lease), and the count of attempts starting again at this claim.
   */
  async recordChunk(db: Queryable, c: { jobId: string; cursor: number; enrolled: number; rejected: Record<string, number>; lockedUntil: Date | null; now: Date; done: boolean }): Promise<void> {
    await rowsOf(
      db,
      `UPDATE bulk_jobs SET cursor = $2, enrolled = enrolled + $3, rejected = $4::jsonb, locked_until = $5, updated_at = $6, attempts = 1, last_error = NULL,
              status = CASE WHEN $7 THEN 'completed' ELSE status END, finished_at = CASE WHEN $7 THEN $6::timestamptz ELSE NULL END,
              lease_token = CASE WHEN $7 THEN NULL ELSE lease_token END
        WHERE id = $1`,
      [c.jobId, c.cursor, c.enrolled, JSON.stringify(c.rejected), c.lockedUntil, c.now, c.done],
    );
  }

  /**
   * Records the error of a chunk that rolled back, if this lease still holds the job; on its last
   * attempt (`attempts >= maxAttempts`) the job ends `failed`. Undefined when the lease moved on.
   */
  async recordChunkFailure(db: Queryable, f: { jobId: string; token: string; error: string; now: Date; maxAttempts: number }): Promise<{ status: BulkJobStatus; attempts: number; organization_id: string } | undefined> {
    const [after] = await rowsOf<{ status: BulkJobStatus; attempts: number; organization_id: string }>(
      db,
      `UPDATE bulk_jobs SET last_error = $3, updated_at = $4,
              status = CASE WHEN attempts >= $5 THEN 'failed' ELSE status END,
              finished_at = CASE WHEN attempts >= $5 THEN $4::timestamptz ELSE finished_at END,
              lease_token = CASE WHEN attempts >= $5 THEN NULL ELSE lease_token END,
              locked_until = CASE WHEN attempts >= $5 THEN NULL ELSE locked_until END
        WHERE id = $1 AND lease_token = $2 AND status = 'running'
        RETURNING status, attempts, organization_id`,
      [f.jobId, f.token, f.error, f.now, f.maxAttempts],
    );
    return after;
  }
}
