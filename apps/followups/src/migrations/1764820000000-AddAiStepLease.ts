import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The lease and fence of AI steps (seed 000 "AI step"): the first pass bumps `ai_attempts` and
 * leases the enrollment until `locked_until` (its `next_run_at` moves there too, so no release
 * claims it meanwhile); the second pass writes only while `ai_attempts` is unchanged.
 */
export class AddAiStepLease1764820000000 implements MigrationInterface {
  name = 'AddAiStepLease1764820000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE enrollments ADD COLUMN ai_attempts integer NOT NULL DEFAULT 0, ADD COLUMN locked_until timestamptz NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE enrollments DROP COLUMN ai_attempts, DROP COLUMN locked_until`);
  }
}
