import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The live statuses the index covers (seed 003 §5). */
const LIVE = `status IN ('active', 'needs_contact_data')`;

/**
 * One live enrollment per person id across every campaign (seed 003 §4.1 check 4, §5 Constraint).
 * A prospect promoted to a CRM person keeps its contact id, so an index that also keyed on the
 * person's kind let the same person run in two campaigns at once.
 *
 * Before the stricter index can exist, the live rows that already share a person id are settled as
 * a promotion would settle them (seed 003 §4.1, Prospect promotion): the enrollment the person
 * replied to most recently stays, then the one already on the CRM person, then the oldest; every
 * other one ends `duplicate` and its pending or approved drafts are invalidated (a draft being sent
 * goes on).
 *
 * `down` restores the per-kind index; the enrollments ended here stay ended.
 */
export class OneLiveEnrollmentPerPersonId1764800000014 implements MigrationInterface {
  name = 'OneLiveEnrollmentPerPersonId1764800000014';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      WITH ranked AS (
        SELECT e.id, row_number() OVER (
                 PARTITION BY e.organization_id, e.person_id
                 ORDER BY (SELECT max(d.created_at) FROM decisions d WHERE d.enrollment_id = e.id AND d.trigger_reason = 'reply_received') DESC NULLS LAST,
                          (e.person_kind = 'crm') DESC, e.created_at, e.id) AS place
          FROM enrollments e WHERE e.${LIVE}
      ), ended AS (
        UPDATE enrollments SET status = 'ended', ended_reason = 'duplicate', ended_at = now(), next_check_at = NULL,
                               context_version = context_version + 1, updated_at = now()
         WHERE id IN (SELECT id FROM ranked WHERE place > 1)
        RETURNING id
      )
      UPDATE proposed_actions SET status = 'invalidated', invalidated_reason = 'duplicate', next_attempt_at = NULL, updated_at = now()
       WHERE enrollment_id IN (SELECT id FROM ended) AND status IN ('pending_approval', 'approved')`);
    await q.query(`DROP INDEX enrollments_one_live_per_person`);
    await q.query(`CREATE UNIQUE INDEX enrollments_one_live_per_person ON enrollments (organization_id, person_id) WHERE ${LIVE}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX enrollments_one_live_per_person`);
    await q.query(`CREATE UNIQUE INDEX enrollments_one_live_per_person ON enrollments (organization_id, person_kind, person_id) WHERE ${LIVE}`);
  }
}
