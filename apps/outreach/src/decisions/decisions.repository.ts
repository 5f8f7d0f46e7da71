import { Injectable } from '@nestjs/common';
import type { DecisionOutcome, DecisionReason, OutreachActionType } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

export interface DecisionRow {
  id: string;
  organization_id: string;
  enrollment_id: string;
  trigger_event_id: string;
  trigger_reason: DecisionReason;
  trigger_ref: string | null;
  context_version: number;
  outcome: DecisionOutcome;
  type: OutreachActionType | null;
  rationale: string | null;
  objective: string | null;
  goal_met: boolean;
  followup_days: number | null;
  failure_reason: string | null;
  reply_to_message_id: string | null;
  reply_to_text: string | null;
  /** The answered message's conversation, provider id and subject (for the send in its thread). */
  reply_to: ReplyRef | null;
  run_id: string | null;
  raw_output: unknown;
  created_at: Date;
  updated_at: Date;
}

export interface ReplyRef {
  message_id: string;
  conversation_id: string | null;
  external_id: string | null;
  subject: string | null;
}

export type NewDecision = Omit<DecisionRow, 'id' | 'created_at' | 'updated_at' | 'reply_to'> & { reply_to?: ReplyRef | null; now: Date };

/** Every SQL statement of decisions (seed 003 §5: one row per decision run, always saved, for audit). */
@Injectable()
export class DecisionsRepository {
  /**
   * Inserts the decision of a trigger; a retried save finds the row it wrote before (unique on
   * (enrollment_id, trigger_event_id)) and gets `inserted: false`.
   */
  async insert(db: Queryable, d: NewDecision): Promise<{ row: DecisionRow; inserted: boolean }> {
    const [row] = await rowsOf<DecisionRow>(
      db,
      `INSERT INTO decisions (organization_id, enrollment_id, trigger_event_id, trigger_reason, trigger_ref, context_version, outcome, type, rationale, objective,
                              goal_met, followup_days, failure_reason, reply_to_message_id, reply_to_text, run_id, raw_output, created_at, updated_at, reply_to)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18, $19)
       ON CONFLICT (enrollment_id, trigger_event_id) DO NOTHING RETURNING *`,
      [
        d.organization_id,
        d.enrollment_id,
        d.trigger_event_id,
        d.trigger_reason,
        d.trigger_ref,
        d.context_version,
        d.outcome,
        d.type,
        d.rationale,
        d.objective,
        d.goal_met,
        d.followup_days,
        d.failure_reason,
        d.reply_to_message_id,
        d.reply_to_text,
        d.run_id,
        d.raw_output === undefined || d.raw_output === null ? null : JSON.stringify(d.raw_output),
        d.now,
        d.reply_to ? JSON.stringify(d.reply_to) : null,
      ],
    );
    if (row) return { row, inserted: true };
    return { row: (await this.findByTrigger(db, d.enrollment_id, d.trigger_event_id))!, inserted: false };
  }

  async findByTrigger(db: Queryable, enrollmentId: string, triggerEventId: string): Promise<DecisionRow | null> {
    const [row] = await rowsOf<DecisionRow>(db, `SELECT * FROM decisions WHERE enrollment_id = $1 AND trigger_event_id = $2`, [enrollmentId, triggerEventId]);
    return row ?? null;
  }

  async findById(db: Queryable, id: string): Promise<DecisionRow | null> {
    const [row] = await rowsOf<DecisionRow>(db, `SELECT * FROM decisions WHERE id = $1`, [id]);
    return row ?? null;
  }

  /** Changes the outcome of a saved decision (a draft failed, a later write lost to a reply). */
  async setOutcome(db: Queryable, id: string, outcome: DecisionOutcome, failureReason: string | null, now: Date): Promise<void> {
    await db.query(`UPDATE decisions SET outcome = $2, failure_reason = COALESCE($3, failure_reason), updated_at = $4 WHERE id = $1`, [id, outcome, failureReason, now]);
  }

  /**
   * The newest `n` outcomes that count for the stalled rule (seed 003 §4.3: errors and discarded
   * decisions are skipped; a saved one breaks the streak).
   */
  async recentCounted(db: Queryable, enrollmentId: string, n: number): Promise<DecisionOutcome[]> {
    const rows = await rowsOf<{ outcome: DecisionOutcome }>(db, `SELECT outcome FROM decisions WHERE enrollment_id = $1 AND outcome IN ('saved', 'invalid') ORDER BY created_at DESC, id DESC LIMIT $2`, [enrollmentId, n]);
    return rows.map((r) => r.outcome);
  }

  async ofEnrollment(db: Queryable, enrollmentId: string, limit = 100): Promise<DecisionRow[]> {
    return rowsOf<DecisionRow>(db, `SELECT * FROM decisions WHERE enrollment_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [enrollmentId, limit]);
  }
}
