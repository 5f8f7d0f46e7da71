import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';

/**
 * Every SQL statement of follow-up retention (seed 000 "Retention"). Each deletes at most `limit`
 * rows, so no statement holds a long transaction; the service repeats one until it takes less
 * than a batch. Live rows never match.
 */
@Injectable()
export class RetentionRepository {
  /**
   * Deletes up to `limit` finished enrollments (completed, cancelled, dead) finished more than
   * their organization's `retention_days` (else `defaultDays`) before `now`, with their timeline
   * and effects, in one statement.
   */
  async deleteFinishedEnrollments(db: Queryable, now: Date, defaultDays: number, limit: number): Promise<{ enrollments: number; events: number; effects: number }> {
    const [r] = await rowsOf<{ enrollments: number; events: number; effects: number }>(
      db,
      `WITH doomed AS (
         SELECT e.id FROM enrollments e LEFT JOIN settings s ON s.organization_id = e.organization_id
          WHERE e.status IN ('completed', 'cancelled', 'dead')
            AND e.finished_at < $1::timestamptz - make_interval(days => coalesce(s.retention_days, $2))
          LIMIT $3),
       ev AS (DELETE FROM enrollment_events WHERE enrollment_id IN (SELECT id FROM doomed) RETURNING 1),
       ef AS (DELETE FROM effects WHERE enrollment_id IN (SELECT id FROM doomed) RETURNING 1),
       en AS (DELETE FROM enrollments WHERE id IN (SELECT id FROM doomed) RETURNING 1)
       SELECT (SELECT count(*) FROM en)::int AS enrollments, (SELECT count(*) FROM ev)::int AS events, (SELECT count(*) FROM ef)::int AS effects`,
      [now, defaultDays, limit],
    );
    return r!;
  }

  /** Deletes up to `limit` finished one-off returns last updated more than their organization's `retention_days` ago. */
  deleteFinishedPromises(db: Queryable, now: Date, defaultDays: number, limit: number): Promise<number> {
    return countDeleted(
      db,
      `DELETE FROM promises WHERE id IN (
         SELECT p.id FROM promises p LEFT JOIN settings s ON s.organization_id = p.organization_id
          WHERE p.status IN ('alerted', 'completed', 'skipped', 'failed', 'cancelled')
            AND p.updated_at < $1::timestamptz - make_interval(days => coalesce(s.retention_days, $2))
          LIMIT $3)`,
      [now, defaultDays, limit],
    );
  }

  /** Deletes up to `limit` triggers processed more than `days` before `now`. */
  deleteProcessedTriggers(db: Queryable, now: Date, days: number, limit: number): Promise<number> {
    return countDeleted(db, `DELETE FROM triggers WHERE id IN (SELECT id FROM triggers WHERE processed_at < $1::timestamptz - make_interval(days => $2) LIMIT $3)`, [now, days, limit]);
  }

  /** Deletes up to `limit` bulk jobs finished (completed, failed) more than `days` before `now`. */
  deleteFinishedBulkJobs(db: Queryable, now: Date, days: number, limit: number): Promise<number> {
    return countDeleted(db, `DELETE FROM bulk_jobs WHERE id IN (SELECT id FROM bulk_jobs WHERE status IN ('completed', 'failed') AND finished_at < $1::timestamptz - make_interval(days => $2) LIMIT $3)`, [now, days, limit]);
  }
}

/** Runs a DELETE and answers how many rows it deleted. */
async function countDeleted(db: Queryable, deleteSql: string, params: unknown[]): Promise<number> {
  const [row] = await rowsOf<{ n: number }>(db, `WITH d AS (${deleteSql} RETURNING 1) SELECT count(*)::int AS n FROM d`, params);
  return row!.n;
}
