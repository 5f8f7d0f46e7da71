import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** A due enrollment (Q1). */
export interface DueEnrollment {
  id: string;
  organization_id: string;
  next_check_at: Date;
}

/** An approved action whose next attempt passed (Q2). */
export interface DueAction {
  id: string;
  organization_id: string;
  enrollment_id: string;
  next_attempt_at: Date;
}

/**
 * The two reads of the due sweep (seed 003 §4.7). Both only read: the schedule lives in
 * `next_check_at` / `next_attempt_at`, and the events they lead to carry ids derived from those
 * times, so a second pass over the same rows publishes ids the consumers already saw.
 */
@Injectable()
export class SweepRepository {
  /**
   * Q1: active enrollments whose next check passed, oldest first, of an active campaign in an
   * organization whose outreach is not stopped. Served by the partial index `enrollments_due`.
   * A paused campaign's rows keep their past due time and come back here after resume.
   */
  async dueEnrollments(db: Queryable, now: Date, limit: number): Promise<DueEnrollment[]> {
    if (limit <= 0) return [];
    return rowsOf<DueEnrollment>(
      db,
      `SELECT e.id, e.organization_id, e.next_check_at
         FROM enrollments e
         JOIN campaigns c ON c.id = e.campaign_id AND c.status = 'active'
         LEFT JOIN organization_settings s ON s.organization_id = e.organization_id
        WHERE e.status = 'active' AND e.next_check_at <= $1 AND s.outreach_stopped_at IS NULL
        ORDER BY e.next_check_at, e.id
        LIMIT $2`,
      [now, limit],
    );
  }

  /** Q2: approved actions whose next attempt passed, oldest first, with the same campaign and stop filters. */
  async dueActions(db: Queryable, now: Date, limit: number): Promise<DueAction[]> {
    if (limit <= 0) return [];
    return rowsOf<DueAction>(
      db,
      `SELECT a.id, a.organization_id, a.enrollment_id, a.next_attempt_at
         FROM proposed_actions a
         JOIN campaigns c ON c.id = a.campaign_id AND c.status = 'active'
         LEFT JOIN organization_settings s ON s.organization_id = a.organization_id
        WHERE a.status = 'approved' AND a.next_attempt_at <= $1 AND s.outreach_stopped_at IS NULL
        ORDER BY a.next_attempt_at, a.id
        LIMIT $2`,
      [now, limit],
    );
  }

  /** Proposed actions by status, for the scrape-time gauge. */
  actionsByStatus(db: Queryable): Promise<{ status: string; n: number }[]> {
    return rowsOf<{ status: string; n: number }>(db, `SELECT status, count(*)::int AS n FROM proposed_actions GROUP BY status`);
  }

  /** Active enrollments whose next check has passed (the database's clock: the backlog as scraped). */
  async dueEnrollmentCount(db: Queryable): Promise<number> {
    const [row] = await rowsOf<{ n: number }>(db, `SELECT count(*)::int AS n FROM enrollments WHERE status = 'active' AND next_check_at <= now()`);
    return row?.n ?? 0;
  }
}
