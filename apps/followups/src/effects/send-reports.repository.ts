import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** A send effect as the reports of its outcome and delivery read and change it (locked). */
export interface ReportedEffect {
  id: string;
  organization_id: string;
  idempotency_key: string;
  enrollment_id: string;
  node_id: string;
  step: number;
  status: string;
  message_id: string | null;
  reason: string | null;
  delivered_at: Date | null;
  read_at: Date | null;
}

/** What `saveSends` writes for one locked send effect after the reports of a transaction. */
export interface SavedSend {
  id: string;
  status: string;
  message_id: string | null;
  reason: string | null;
  /** Set once (only written where still null). */
  delivered_at: Date | null;
  read_at: Date | null;
  /** `updated_at` becomes the later of `set_at` (else its own value) and `floor_at`. */
  set_at: Date | null;
  floor_at: Date | null;
}

/**
 * An enrollment write of a send report. `settle` (an outcome): the send in flight is this effect;
 * `last_send_status` takes the outcome, and the marker clears when `clear`. `raise` (a delivery
 * report): `last_send_status` moves up to `status`, never down, and only for the enrollment's
 * newest send (the effect in flight, or one with no keyed send of a later step); the marker clears
 * when it is this effect.
 */
export interface EnrollmentSendWrite {
  op: 'settle' | 'raise';
  enrollment_id: string;
  effect_id: string;
  status: string;
  clear: boolean;
  step: number;
  at: Date;
}

/** Rank of `last_send_status` values a delivery report may move: forward only. */
const RANK_SQL = `CASE e.last_send_status WHEN 'read' THEN 3 WHEN 'delivered' THEN 2 ELSE 0 END`;

/** The statements of a batch of send reports (`SendReportsService`): one each for the whole batch. */
@Injectable()
export class SendReportsRepository {
  /**
   * Locks the send effects with these idempotency keys, in id order (two batches sharing effects
   * lock them in one order), on `effects_idempotency_key_idx`; the caller matches the
   * organization of each report.
   */
  async lockSends(db: Queryable, organizationIds: string[], keys: string[]): Promise<ReportedEffect[]> {
    if (keys.length === 0) return [];
    return rowsOf<ReportedEffect>(
      db,
      `SELECT id, organization_id, idempotency_key, enrollment_id, node_id, step, status, message_id, reason, delivered_at, read_at FROM effects
        WHERE idempotency_key = ANY($1::text[]) AND idempotency_key IS NOT NULL AND organization_id = ANY($2::uuid[]) AND kind = 'send'
        ORDER BY id FOR UPDATE`,
      [keys, [...new Set(organizationIds)]],
    );
  }

  /** Writes the locked send effects' state after the reports, one statement for all of them. */
  async saveSends(db: Queryable, rows: SavedSend[]): Promise<void> {
    if (rows.length === 0) return;
    await rowsOf(
      db,
      `UPDATE effects f SET status = v.status, message_id = v.message_id, reason = v.reason,
              delivered_at = COALESCE(f.delivered_at, v.delivered_at), read_at = COALESCE(f.read_at, v.read_at),
              updated_at = GREATEST(COALESCE(v.set_at, f.updated_at), v.floor_at)
         FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[])
              AS v(id, status, message_id, reason, delivered_at, read_at, set_at, floor_at)
        WHERE f.id = v.id`,
      [rows.map((r) => r.id), rows.map((r) => r.status), rows.map((r) => r.message_id), rows.map((r) => r.reason), rows.map((r) => r.delivered_at), rows.map((r) => r.read_at), rows.map((r) => r.set_at), rows.map((r) => r.floor_at)],
    );
  }

  /**
   * The enrollment writes of the reports, at most one per enrollment (the caller runs several
   * rounds when one enrollment has more), one statement; see `EnrollmentSendWrite` for the rules,
   * the same as a single report's.
   */
  async moveEnrollments(db: Queryable, writes: EnrollmentSendWrite[]): Promise<void> {
    if (writes.length === 0) return;
    await rowsOf(
      db,
      `UPDATE enrollments e SET last_send_status = o.status,
              inflight_effect_id = CASE WHEN (o.op = 'settle' AND o.clear) OR (o.op = 'raise' AND e.inflight_effect_id = o.effect_id) THEN NULL ELSE e.inflight_effect_id END,
              updated_at = o.at
         FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::text[], $5::boolean[], $6::int[], $7::timestamptz[]) AS o(op, enrollment_id, effect_id, status, clear, step, at)
        WHERE e.id = o.enrollment_id
          AND CASE WHEN o.op = 'settle' THEN e.inflight_effect_id = o.effect_id
                   ELSE ${RANK_SQL} < (CASE o.status WHEN 'read' THEN 3 ELSE 2 END)
                        AND (e.inflight_effect_id = o.effect_id OR NOT EXISTS (
                              SELECT 1 FROM effects x WHERE x.enrollment_id = o.enrollment_id AND x.kind = 'send' AND x.idempotency_key IS NOT NULL AND x.step > o.step)) END`,
      [writes.map((w) => w.op), writes.map((w) => w.enrollment_id), writes.map((w) => w.effect_id), writes.map((w) => w.status), writes.map((w) => w.clear), writes.map((w) => w.step), writes.map((w) => w.at)],
    );
  }
}
