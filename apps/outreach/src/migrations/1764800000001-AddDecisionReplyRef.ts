import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What execution needs of the message an email decision answers (seed 003 §4.3, The thread of a
 * reply): its conversation, provider id (to reply in its thread) and subject ("Re: " + subject).
 */
export class AddDecisionReplyRef1764800000001 implements MigrationInterface {
  name = 'AddDecisionReplyRef1764800000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE decisions ADD COLUMN reply_to jsonb NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE decisions DROP COLUMN reply_to`);
  }
}
