import { Injectable } from '@nestjs/common';
import type { FlowStatus, FlowTemplateRef } from '@touchpoint/contracts';
import type { EnrollmentRow } from '../enrollments/enrollment-row.js';
import { type Queryable, rowsOf } from '../requests/queryable.js';

/** Statuses the release loop picks up when due. */
const DUE_STATUSES = `('active', 'waiting_reply')`;

/** Every statement of the release loop that is not plain enrollment state. */
@Injectable()
export class ReleaseRepository {
  /**
   * Claims the oldest due enrollment (seed 000 "claim … FOR UPDATE SKIP LOCKED"): rows another
   * release holds are skipped, never waited for, so any number of workers and replicas can run.
   * The flow's status comes along (no lock on the flow: pausing it is checked, not raced).
   */
  async claimDue(db: Queryable, now: Date): Promise<(EnrollmentRow & { flow_status: FlowStatus }) | undefined> {
    const [row] = await rowsOf<EnrollmentRow & { flow_status: FlowStatus }>(db, 
      `SELECT e.*, f.status AS flow_status
         FROM enrollments e JOIN flows f ON f.id = e.flow_id
        WHERE e.id = (
          SELECT id FROM enrollments
           WHERE status IN ${DUE_STATUSES} AND next_run_at <= $1
           ORDER BY next_run_at
           LIMIT 1
           FOR UPDATE SKIP LOCKED)`,
      [now],
    );
    return row;
  }

  /**
   * The flow's status under a share lock, for a release about to park or stop an enrollment
   * because of it: a status change holds the flow row, so the two are ordered and a flow
   * re-activated meanwhile cannot miss the enrollment it parks. SKIP LOCKED: never wait.
   * @returns the status, or undefined when the flow row is being changed right now
   */
  async lockFlowStatus(db: Queryable, flowId: string): Promise<FlowStatus | undefined> {
    const [row] = await rowsOf<{ status: FlowStatus }>(db, `SELECT status FROM flows WHERE id = $1 FOR SHARE SKIP LOCKED`, [flowId]);
    return row?.status;
  }

  /** Pushes a claimed enrollment's due time (busy contact, pacing): nothing else changes. */
  async deferOnly(db: Queryable, id: string, at: Date): Promise<void> {
    await rowsOf(db, `UPDATE enrollments SET next_run_at = $2 WHERE id = $1`, [id, at]);
  }

  /**
   * Records an unexpected failure of a release that rolled back (seed 000 "Failure behaviour"): the
   * enrollment backs off, and becomes `dead` after `maxFailures`. Only if it is still at the step
   * that failed (its revision), so a concurrent stop is never overwritten.
   * @returns the failures count and status after the update, or undefined when the row moved on
   */
  async recordFailure(db: Queryable, id: string, revision: number, error: string, backoffMs: (failures: number) => number, maxFailures: number, now: Date): Promise<{ failures: number; status: string } | undefined> {
    const [row] = await rowsOf<{ failures: number; revision: number }>(db, `SELECT failures, revision FROM enrollments WHERE id = $1 AND revision = $2 AND status IN ${DUE_STATUSES} FOR UPDATE`, [id, revision]);
    if (!row) return undefined;
    const failures = row.failures + 1;
    const dead = failures >= maxFailures;
    const [saved] = await rowsOf<{ failures: number; status: string }>(db, 
      `UPDATE enrollments SET failures = $2, last_error = $3, status = CASE WHEN $4 THEN 'dead' ELSE status END,
              reason = CASE WHEN $4 THEN 'too_many_failures' ELSE reason END,
              finished_at = CASE WHEN $4 THEN $5::timestamptz ELSE finished_at END,
              next_run_at = CASE WHEN $4 THEN NULL ELSE $6::timestamptz END,
              revision = revision + 1, updated_at = $5
        WHERE id = $1 RETURNING failures, status`,
      [id, failures, error.slice(0, 1000), dead, now, new Date(now.getTime() + backoffMs(failures))],
    );
    return saved;
  }

  /**
   * Inserts a step's effect. Unique on (enrollment, node, visit, kind): a second release of the same
   * step inserts nothing.
   * @returns the effect id, or undefined when the step already had this effect
   */
  async insertEffect(
    db: Queryable,
    e: {
      id: string;
      organizationId: string;
      enrollmentId: string;
      contactId: string;
      nodeId: string;
      step: number;
      kind: 'send' | 'action' | 'schedule_plan';
      status: string;
      idempotencyKey?: string | null;
      text?: string | null;
      template?: FlowTemplateRef | null;
      senderId?: string | null;
      reason?: string | null;
      now: Date;
    },
  ): Promise<string | undefined> {
    const rows = await rowsOf<{ id: string }>(db, 
      `INSERT INTO effects (id, organization_id, enrollment_id, contact_id, node_id, step, kind, status, idempotency_key, text, template, sender_id, reason, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, $14)
       ON CONFLICT (enrollment_id, node_id, step, kind) DO NOTHING RETURNING id`,
      [e.id, e.organizationId, e.enrollmentId, e.contactId, e.nodeId, e.step, e.kind, e.status, e.idempotencyKey ?? null, e.text ?? null, e.template ? JSON.stringify(e.template) : null, e.senderId ?? null, e.reason ?? null, e.now],
    );
    return rows[0]?.id;
  }

  /** The latest schedule plan of a step (a deferral to the window, cap or quota), kept up to date. */
  async upsertSchedulePlan(db: Queryable, p: { id: string; organizationId: string; enrollmentId: string; contactId: string; nodeId: string; step: number; reason: string; at: Date; now: Date }): Promise<void> {
    await rowsOf(db, 
      `INSERT INTO effects (id, organization_id, enrollment_id, contact_id, node_id, step, kind, status, reason, usage, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'schedule_plan', 'done', $7, jsonb_build_object('planned_at', $8::text), $9, $9)
       ON CONFLICT (enrollment_id, node_id, step, kind) DO UPDATE SET reason = EXCLUDED.reason, usage = EXCLUDED.usage, updated_at = EXCLUDED.updated_at`,
      [p.id, p.organizationId, p.enrollmentId, p.contactId, p.nodeId, p.step, p.reason, p.at.toISOString(), p.now],
    );
  }

  /** The contact's follow-up sends in the 24 hours before `now`, and the oldest of them (per-contact cap). */
  async recentSends(db: Queryable, contactId: string, now: Date): Promise<{ count: number; oldest: Date | null }> {
    const [row] = await rowsOf<{ count: number; oldest: Date | null }>(db, 
      `SELECT count(*)::int AS count, min(created_at) AS oldest FROM effects
        WHERE contact_id = $1 AND kind = 'send' AND status IN ('queued', 'sent', 'uncertain') AND created_at > $2`,
      [contactId, new Date(now.getTime() - 24 * 3_600_000)],
    );
    return row;
  }

  /**
   * Counts one send against the monthly quota if there is room (one statement that counts and
   * refuses, DESIGN §6).
   * @returns whether the send fits
   */
  async takeMonthlySend(db: Queryable, organizationId: string, month: string, quota: number): Promise<boolean> {
    const rows = await rowsOf(db, 
      `INSERT INTO monthly_usage AS u (organization_id, month, sends) VALUES ($1, $2::date, 1)
       ON CONFLICT (organization_id, month) DO UPDATE SET sends = u.sends + 1 WHERE u.sends < $3
       RETURNING sends`,
      [organizationId, month, quota],
    );
    return rows.length > 0 && quota >= 1;
  }
}
