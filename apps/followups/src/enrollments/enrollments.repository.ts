import { cursorAtSql, type Queryable, rowsOf } from '@touchpoint/database';
import { Injectable } from '@nestjs/common';
import type { FollowupEnrollmentStatus } from '@touchpoint/contracts';
import type { EffectRow, EnrollmentEventRow, EnrollmentRow, NewEnrollmentEvent } from './enrollment-row.js';

/** Columns the engine and the control route change; `saveState` writes them all at once. */
const MUTABLE = [
  'status',
  'reason',
  'node_id',
  'step',
  'next_run_at',
  'node_entered_at',
  'variables',
  'sender_id',
  'repeat_counts',
  'last_reply_text',
  'reply_seen_at',
  'handoff_seen_at',
  'pending_exit',
  'last_send_status',
  'inflight_effect_id',
  'sender_unavailable_since',
  'failures',
  'last_error',
  'finished_at',
] as const satisfies readonly (keyof EnrollmentRow)[];

const JSON_COLUMNS = new Set(['variables', 'repeat_counts']);

/** Every SQL statement of enrollments, their timeline and effects (reads and the engine's writes). */
@Injectable()
export class EnrollmentsRepository {
  async findByOperationKey(db: Queryable, organizationId: string, operationKey: string): Promise<EnrollmentRow | undefined> {
    const [row] = await rowsOf<EnrollmentRow>(db, `SELECT * FROM enrollments WHERE organization_id = $1 AND operation_key = $2`, [organizationId, operationKey]);
    return row;
  }

  async find(db: Queryable, organizationId: string, id: string, lock = false): Promise<EnrollmentRow | undefined> {
    const [row] = await rowsOf<EnrollmentRow>(db, `SELECT * FROM enrollments WHERE id = $1 AND organization_id = $2 ${lock ? 'FOR UPDATE' : ''}`, [id, organizationId]);
    return row;
  }

  /** Live enrollments of an organization (plan limit). */
  async countLive(db: Queryable, organizationId: string): Promise<number> {
    const [row] = await rowsOf<{ n: number }>(db, `SELECT count(*)::int AS n FROM enrollments WHERE organization_id = $1 AND status IN ('active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual')`, [organizationId]);
    return row.n;
  }

  /** Inserts a new enrollment; a unique violation (operation key, one live per flow × contact) surfaces as a pg error. */
  async insert(db: Queryable, row: EnrollmentRow): Promise<EnrollmentRow> {
    const columns = Object.keys(row) as (keyof EnrollmentRow)[];
    const values = columns.map((c) => (JSON_COLUMNS.has(c) ? JSON.stringify(row[c]) : row[c]));
    const [saved] = await rowsOf<EnrollmentRow>(db, `INSERT INTO enrollments (${columns.join(', ')}) VALUES (${columns.map((c, i) => `$${i + 1}${JSON_COLUMNS.has(c) ? '::jsonb' : ''}`).join(', ')}) RETURNING *`, values);
    return saved;
  }

  /**
   * Writes the engine's state of an enrollment whose row lock the caller holds, bumping its revision.
   * @returns the saved row
   */
  async saveState(db: Queryable, state: EnrollmentRow, now: Date): Promise<EnrollmentRow> {
    const values = MUTABLE.map((c) => (JSON_COLUMNS.has(c) ? JSON.stringify(state[c]) : state[c]));
    const [row] = await rowsOf<EnrollmentRow>(
      db,
      `UPDATE enrollments SET ${MUTABLE.map((c, i) => `${c} = $${i + 3}${JSON_COLUMNS.has(c) ? '::jsonb' : ''}`).join(', ')}, revision = revision + 1, updated_at = $2
        WHERE id = $1 RETURNING *`,
      [state.id, now, ...values],
    );
    return row;
  }

  /** Appends timeline entries (one statement). */
  /** Makes a live enrollment due `now` (revision + 1) only while it still stands at that visit (`nodeId`, `step`) of the node. */
  async wakeAtVisit(db: Queryable, id: string, nodeId: string, step: number, now: Date): Promise<void> {
    await rowsOf(
      db,
      `UPDATE enrollments SET next_run_at = $4, updated_at = $4, revision = revision + 1
        WHERE id = $1 AND node_id = $2 AND step = $3 AND status = 'active'`,
      [id, nodeId, step, now],
    );
  }

  /**
   * Records `status` as the last send's, only while `effectId` is the send in flight; `clear`
   * (an outcome that is final) also ends the in-flight marker.
   */
  async settleInflight(db: Queryable, id: string, effectId: string, status: string, now: Date, clear = true): Promise<void> {
    await rowsOf(
      db,
      `UPDATE enrollments SET last_send_status = $3, inflight_effect_id = CASE WHEN $4 THEN NULL ELSE inflight_effect_id END, updated_at = $5
        WHERE id = $1 AND inflight_effect_id = $2`,
      [id, effectId, status, clear, now],
    );
  }

  async insertEvents(db: Queryable, events: NewEnrollmentEvent[]): Promise<void> {
    if (events.length === 0) return;
    await rowsOf(
      db,
      `INSERT INTO enrollment_events (organization_id, enrollment_id, type, node_id, data, created_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[])`,
      [events.map((e) => e.organization_id), events.map((e) => e.enrollment_id), events.map((e) => e.type), events.map((e) => e.node_id), events.map((e) => JSON.stringify(e.data)), events.map((e) => e.at)],
    );
  }

  async events(db: Queryable, enrollmentId: string, limit = 500): Promise<EnrollmentEventRow[]> {
    return rowsOf<EnrollmentEventRow>(db, `SELECT id, type, node_id, data, created_at FROM enrollment_events WHERE enrollment_id = $1 ORDER BY id DESC LIMIT $2`, [enrollmentId, limit]);
  }

  async effects(db: Queryable, enrollmentId: string, limit = 500): Promise<EffectRow[]> {
    return rowsOf<EffectRow>(db, `SELECT * FROM effects WHERE enrollment_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [enrollmentId, limit]);
  }

  async findEffect(db: Queryable, effectId: string): Promise<EffectRow | undefined> {
    const [row] = await rowsOf<EffectRow>(db, `SELECT * FROM effects WHERE id = $1`, [effectId]);
    return row;
  }

  /**
   * A keyset page, newest first. `after` is the last row of the previous page: rows strictly after it
   * in (created_at DESC, id DESC) order, so rows sharing a timestamp are neither repeated nor skipped.
   */
  async page(db: Queryable, filter: { organizationId: string; flowId?: string; contactId?: string; status?: FollowupEnrollmentStatus }, after: { createdAt: string; id: string } | undefined, limit: number): Promise<(EnrollmentRow & { cursor_at: string })[]> {
    const where = ['organization_id = $1'];
    const params: unknown[] = [filter.organizationId];
    if (filter.flowId) where.push(`flow_id = $${params.push(filter.flowId)}`);
    if (filter.contactId) where.push(`contact_id = $${params.push(filter.contactId)}`);
    if (filter.status) where.push(`status = $${params.push(filter.status)}`);
    if (after) where.push(`(created_at, id) < ($${params.push(after.createdAt)}::timestamptz, $${params.push(after.id)}::uuid)`);
    params.push(limit);
    return rowsOf(
      db,
      `SELECT *, ${cursorAtSql('created_at')} AS cursor_at
         FROM enrollments WHERE ${where.join(' AND ')}
        ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
  }
}
