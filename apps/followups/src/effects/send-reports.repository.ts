import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf, genericPlan } from '@touchpoint/database';
import type { NewEnrollmentEvent } from '../enrollments/enrollment-row.js';

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

  /**
   * Writes what a batch of reports changed, in one statement: the locked send effects' state, one
   * round of enrollment writes (at most one per enrollment; see `EnrollmentSendWrite`) and the
   * enrollment events. The parts share one snapshot and touch different rows and columns (the
   * enrollment rule reads the effects' kind, key and step, which no report changes).
   */
  async write(db: Queryable, sends: SavedSend[], enrollments: EnrollmentSendWrite[], events: NewEnrollmentEvent[]): Promise<void> {
    if (sends.length + enrollments.length + events.length === 0) return;
    await rowsOf(
      db,
      genericPlan(`WITH saved AS (
         UPDATE effects f SET status = v.status, message_id = v.message_id, reason = v.reason,
                delivered_at = COALESCE(f.delivered_at, v.delivered_at), read_at = COALESCE(f.read_at, v.read_at),
                updated_at = GREATEST(COALESCE(v.set_at, f.updated_at), v.floor_at)
           FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[])
                AS v(id, status, message_id, reason, delivered_at, read_at, set_at, floor_at)
          WHERE f.id = v.id
         RETURNING 1),
       moved AS (
         UPDATE enrollments e SET last_send_status = o.status,
                inflight_effect_id = CASE WHEN (o.op = 'settle' AND o.clear) OR (o.op = 'raise' AND e.inflight_effect_id = o.effect_id) THEN NULL ELSE e.inflight_effect_id END,
                updated_at = o.at
           FROM unnest($9::text[], $10::uuid[], $11::uuid[], $12::text[], $13::boolean[], $14::int[], $15::timestamptz[]) AS o(op, enrollment_id, effect_id, status, clear, step, at)
          WHERE e.id = o.enrollment_id
            AND CASE WHEN o.op = 'settle' THEN e.inflight_effect_id = o.effect_id
                     ELSE ${RANK_SQL} < (CASE o.status WHEN 'read' THEN 3 ELSE 2 END)
                          AND (e.inflight_effect_id = o.effect_id OR NOT EXISTS (
                                SELECT 1 FROM effects x WHERE x.enrollment_id = o.enrollment_id AND x.kind = 'send' AND x.idempotency_key IS NOT NULL AND x.step > o.step)) END
         RETURNING 1),
       logged AS (
         INSERT INTO enrollment_events (organization_id, enrollment_id, type, node_id, data, created_at)
         SELECT * FROM unnest($16::uuid[], $17::uuid[], $18::text[], $19::text[], $20::jsonb[], $21::timestamptz[])
         RETURNING 1)
       SELECT (SELECT count(*) FROM saved) AS saved, (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM logged) AS logged`),
      [
        sends.map((r) => r.id),
        sends.map((r) => r.status),
        sends.map((r) => r.message_id),
        sends.map((r) => r.reason),
        sends.map((r) => r.delivered_at),
        sends.map((r) => r.read_at),
        sends.map((r) => r.set_at),
        sends.map((r) => r.floor_at),
        enrollments.map((w) => w.op),
        enrollments.map((w) => w.enrollment_id),
        enrollments.map((w) => w.effect_id),
        enrollments.map((w) => w.status),
        enrollments.map((w) => w.clear),
        enrollments.map((w) => w.step),
        enrollments.map((w) => w.at),
        events.map((e) => e.organization_id),
        events.map((e) => e.enrollment_id),
        events.map((e) => e.type),
        events.map((e) => e.node_id),
        events.map((e) => JSON.stringify(e.data)),
        events.map((e) => e.at),
      ],
    );
  }
}
