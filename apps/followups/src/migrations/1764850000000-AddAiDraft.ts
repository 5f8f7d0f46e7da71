import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The model's answer of an AI-written send kept on its enrollment while the send waits (pacing,
 * the per-contact cap, a sender coming back): the next release of the same visit sends it instead
 * of asking the model again. Keyed by node and visit, and dropped on the next visit.
 */
export class AddAiDraft1764850000000 implements MigrationInterface {
  name = 'AddAiDraft1764850000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE enrollments ADD COLUMN ai_draft jsonb NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE enrollments DROP COLUMN ai_draft`);
  }
}
