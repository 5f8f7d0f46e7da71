import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Columns the release gates and delivery statuses need (seed 000 "Release" checks and timing):
 * the organization's follow-ups entitlement ("plan lost → stop"), the contact's own time zone (a
 * send window read on the recipient's clock), when a send was delivered and read (a condition on
 * `last_send.status`), and the claims of a bulk job since its last good chunk (a job whose chunk
 * keeps failing ends `failed`).
 */
export class AddReleaseGates1796130358289417 implements MigrationInterface {
  name = 'AddReleaseGates1796130358289417';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE settings ADD COLUMN followups_enabled boolean NOT NULL DEFAULT true`);
    await q.query(`ALTER TABLE contacts ADD COLUMN time_zone text NULL`);
    await q.query(`ALTER TABLE effects ADD COLUMN delivered_at timestamptz NULL, ADD COLUMN read_at timestamptz NULL`);
    await q.query(`ALTER TABLE bulk_jobs ADD COLUMN attempts integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE bulk_jobs DROP COLUMN attempts`);
    await q.query(`ALTER TABLE effects DROP COLUMN read_at, DROP COLUMN delivered_at`);
    await q.query(`ALTER TABLE contacts DROP COLUMN time_zone`);
    await q.query(`ALTER TABLE settings DROP COLUMN followups_enabled`);
  }
}
