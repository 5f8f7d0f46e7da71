import { cursorAtSql, iso, type Queryable, rowsOf } from '@touchpoint/database';
import { Injectable } from '@nestjs/common';
import type { OutreachEnrollmentEndReason, OutreachEnrollmentStatus, OutreachEnrollmentView, PersonKind } from '@touchpoint/contracts';

export interface EnrollmentRow {
  id: string;
  organization_id: string;
  campaign_id: string;
  person_kind: PersonKind;
  person_id: string;
  status: OutreachEnrollmentStatus;
  ended_reason: OutreachEnrollmentEndReason | null;
  ended_at: Date | null;
  touch_count: number;
  context_version: number;
  next_check_at: Date | null;
  created_at: Date;
  updated_at: Date;
  seq: string;
  awaiting_approval?: boolean;
}

/** A live enrollment with what an `already_enrolled` answer names: its campaign's name and status. */
export type LiveEnrollmentRow = EnrollmentRow & { campaign_name: string; campaign_status: string };

export const toOutreachEnrollmentView = (r: EnrollmentRow): OutreachEnrollmentView => ({
  id: r.id,
  organization_id: r.organization_id,
  campaign_id: r.campaign_id,
  person_kind: r.person_kind,
  person_id: r.person_id,
  status: r.status,
  ended_reason: r.ended_reason,
  ended_at: iso(r.ended_at),
  touch_count: r.touch_count,
  context_version: r.context_version,
  next_check_at: iso(r.next_check_at),
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
  awaiting_approval: Boolean(r.awaiting_approval),
});

/** The statuses the one-live-enrollment index covers (seed 003 §5). */
export const LIVE_STATUSES: OutreachEnrollmentStatus[] = ['active', 'needs_contact_data'];

const AWAITING = `EXISTS (SELECT 1 FROM proposed_actions a WHERE a.enrollment_id = e.id AND a.status = 'pending_approval') AS awaiting_approval`;

/**
 * Every SQL statement of enrollments. Writes that follow a decision are compare-and-set on
 * `context_version` (seed 003 §3, Reliability): a write that finds 0 rows lost to a newer change.
 */
@Injectable()
export class EnrollmentsRepository {
  /**
   * Inserts a live enrollment unless the person id already has one anywhere in the organization,
   * whatever kind it was enrolled as (a promoted prospect keeps its id). The partial unique index on
   * (organization_id, person_id) decides, so of two racing requests exactly one wins. Null when one
   * exists.
   */
  async insertLive(db: Queryable, r: { organization_id: string; campaign_id: string; person_kind: PersonKind; person_id: string; next_check_at: Date; now: Date }): Promise<EnrollmentRow | null> {
    const [row] = await rowsOf<EnrollmentRow>(
      db,
      `INSERT INTO enrollments (organization_id, campaign_id, person_kind, person_id, status, touch_count, context_version, next_check_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'active', 0, 1, $5, $6, $6)
       ON CONFLICT (organization_id, person_id) WHERE status IN ('active', 'needs_contact_data') DO NOTHING
       RETURNING *`,
      [r.organization_id, r.campaign_id, r.person_kind, r.person_id, r.next_check_at, r.now],
    );
    return row ?? null;
  }

  /**
   * The person id's live enrollment (any kind, any campaign) with its campaign's name and status,
   * or null. `lock` takes the row (a promotion settles a duplicate under it).
   */
  async findLiveOfPerson(db: Queryable, organizationId: string, personId: string, options: { lock?: boolean; exceptId?: string } = {}): Promise<LiveEnrollmentRow | null> {
    const [row] = await rowsOf<LiveEnrollmentRow>(
      db,
      `SELECT e.*, c.name AS campaign_name, c.status AS campaign_status FROM enrollments e JOIN campaigns c ON c.id = e.campaign_id
        WHERE e.organization_id = $1 AND e.person_id = $2 AND e.status IN ('active', 'needs_contact_data') AND ($3::uuid IS NULL OR e.id <> $3::uuid)
        ${options.lock ? 'FOR UPDATE OF e' : ''}`,
      [organizationId, personId, options.exceptId ?? null],
    );
    return row ?? null;
  }

  /**
   * Moves an enrollment to a CRM person (seed 003 §4.1, Prospect promotion): kind `crm` and the CRM
   * person's id. No version bump: the person is the same, only their record changed.
   */
  async moveToCrmPerson(db: Queryable, id: string, crmPersonId: string, now: Date): Promise<void> {
    await db.query(`UPDATE enrollments SET person_kind = 'crm', person_id = $2, updated_at = $3 WHERE id = $1`, [id, crmPersonId, now]);
  }

  async countLive(db: Queryable, campaignId: string): Promise<number> {
    const [row] = await rowsOf<{ n: number }>(db, `SELECT count(*)::int AS n FROM enrollments WHERE campaign_id = $1 AND status IN ('active', 'needs_contact_data')`, [campaignId]);
    return row!.n;
  }

  /**
   * Serialises the cap's recounts of one campaign (a transaction-scoped advisory lock): each
   * recount then sees the take-backs of the ones before it, so the last one always sees every
   * committed row and leaves at most the cap.
   */
  async lockCapRecount(db: Queryable, campaignId: string): Promise<void> {
    await db.query(`SELECT pg_advisory_xact_lock(hashtext('outreach:cap:' || $1))`, [campaignId]);
  }

  /**
   * Takes back (deletes) `ids`' newest `count` rows that are still untouched live rows of this
   * request (seed 003 §4.1: a row past the cap is taken back before any run). Returns the ids taken.
   */
  async takeBack(db: Queryable, ids: string[], count: number): Promise<string[]> {
    if (count <= 0 || ids.length === 0) return [];
    const rows = await rowsOf<{ id: string }>(
      db,
      `DELETE FROM enrollments WHERE id IN (
         SELECT id FROM enrollments WHERE id = ANY($1::uuid[]) AND status = 'active' AND context_version = 1 ORDER BY seq DESC LIMIT $2)
       RETURNING id`,
      [ids, count],
    );
    return rows.map((r) => r.id);
  }

  async find(db: Queryable, organizationId: string, id: string, lock = false): Promise<EnrollmentRow | null> {
    const [row] = await rowsOf<EnrollmentRow>(db, lock ? `SELECT e.* FROM enrollments e WHERE e.organization_id = $1 AND e.id = $2 FOR UPDATE` : `SELECT e.*, ${AWAITING} FROM enrollments e WHERE e.organization_id = $1 AND e.id = $2`, [organizationId, id]);
    return row ?? null;
  }

  /** Reads by id alone: runners are handed an id by their own event (organization from the row). */
  async findById(db: Queryable, id: string): Promise<EnrollmentRow | null> {
    const [row] = await rowsOf<EnrollmentRow>(db, `SELECT e.*, ${AWAITING} FROM enrollments e WHERE e.id = $1`, [id]);
    return row ?? null;
  }

  /**
   * A keyset page of a campaign's enrollments, newest first, strictly after `after` in
   * (created_at DESC, id DESC) order: rows sharing a timestamp are neither repeated nor skipped.
   */
  async list(db: Queryable, organizationId: string, campaignId: string, status: OutreachEnrollmentStatus | undefined, after: { createdAt: string; id: string } | undefined, limit: number): Promise<(EnrollmentRow & { cursor_at: string })[]> {
    return rowsOf<EnrollmentRow & { cursor_at: string }>(
      db,
      `SELECT e.*, ${AWAITING}, ${cursorAtSql('e.created_at')} AS cursor_at
         FROM enrollments e WHERE e.organization_id = $1 AND e.campaign_id = $2 AND ($3::text IS NULL OR e.status = $3)
          AND ($5::timestamptz IS NULL OR (e.created_at, e.id) < ($5::timestamptz, $6::uuid))
        ORDER BY e.created_at DESC, e.id DESC LIMIT $4`,
      [organizationId, campaignId, status ?? null, limit, after?.createdAt ?? null, after?.id ?? null],
    );
  }

  /**
   * Compare-and-set write on `context_version = expected`: applies `set` and moves the version to
   * `expected + 1` (unless `bump` is false). Null when the row moved on (0 rows).
   * @param set column → value; `status` changes must keep ended_reason consistent
   */
  async compareAndSet(db: Queryable, id: string, expected: number, set: Partial<Pick<EnrollmentRow, 'status' | 'ended_reason' | 'ended_at' | 'next_check_at'>>, now: Date, options: { bump?: boolean; onlyStatus?: OutreachEnrollmentStatus[] } = {}): Promise<EnrollmentRow | null> {
    const params: unknown[] = [id, expected, now];
    const sets = [`updated_at = $3`];
    if (options.bump !== false) sets.push(`context_version = context_version + 1`);
    for (const [column, value] of Object.entries(set)) {
      params.push(value);
      sets.push(`${column} = $${params.length}`);
    }
    params.push(options.onlyStatus ?? null);
    const [row] = await rowsOf<EnrollmentRow>(db, `UPDATE enrollments SET ${sets.join(', ')} WHERE id = $1 AND context_version = $2 AND ($${params.length}::text[] IS NULL OR status = ANY($${params.length}::text[])) RETURNING *`, params);
    return row ?? null;
  }

  /**
   * Ends every live enrollment of a campaign (archive): `campaign_archived`, v+1. Returns their ids.
   */
  async endLiveOfCampaign(db: Queryable, campaignId: string, reason: OutreachEnrollmentEndReason, now: Date): Promise<string[]> {
    const rows = await rowsOf<{ id: string }>(
      db,
      `UPDATE enrollments SET status = 'ended', ended_reason = $2, ended_at = $3, next_check_at = NULL, context_version = context_version + 1, updated_at = $3
        WHERE campaign_id = $1 AND status IN ('active', 'needs_contact_data') RETURNING id`,
      [campaignId, reason, now],
    );
    return rows.map((r) => r.id);
  }

  /**
   * The record of a send (seed 003 §4.6): touch_count + 1 and `next_check_at` only where it is
   * null (a reply's "now" wins); no version bump, so the decision a reply started stands.
   */
  async recordTouch(db: Queryable, id: string, nextCheckAt: Date, now: Date): Promise<void> {
    await db.query(`UPDATE enrollments SET touch_count = touch_count + 1, next_check_at = COALESCE(next_check_at, $2), updated_at = $3 WHERE id = $1`, [id, nextCheckAt, now]);
  }

  /**
   * Wakes an enrollment after its action was invalidated (seed 003 §4.6): v+1 and
   * `next_check_at = now`, no event (the due sweep asks). Only a live row changes.
   */
  async wake(db: Queryable, id: string, now: Date): Promise<void> {
    await db.query(`UPDATE enrollments SET context_version = context_version + 1, next_check_at = $2, updated_at = $2 WHERE id = $1 AND status = 'active'`, [id, now]);
  }

  /**
   * Makes a live enrollment due `now` unless it already has a next check (a failed send after
   * the draft save cleared it would otherwise never come due again). No version bump.
   */
  async dueIfUnscheduled(db: Queryable, id: string, now: Date): Promise<void> {
    await db.query(`UPDATE enrollments SET next_check_at = COALESCE(next_check_at, $2), updated_at = $2 WHERE id = $1 AND status = 'active'`, [id, now]);
  }

  /** Moves a waiting enrollment's next check to `nextCheckAt` (an out-of-office return date); only a live row with a next check changes. */
  async moveNextCheck(db: Queryable, id: string, nextCheckAt: Date, now: Date): Promise<void> {
    await db.query(`UPDATE enrollments SET next_check_at = $2, updated_at = $3 WHERE id = $1 AND status = 'active' AND next_check_at IS NOT NULL`, [id, nextCheckAt, now]);
  }
}
