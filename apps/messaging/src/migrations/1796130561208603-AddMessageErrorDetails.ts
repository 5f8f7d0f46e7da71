import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A failed message keeps what Meta said beyond the code (its error-codes page recommends handling
 * by `code` and `error_data.details`): Graph's `error_subcode` and the details, on the message
 * and on a status kept before its message was known.
 */
export class AddMessageErrorDetails1796130561208603 implements MigrationInterface {
  name = 'AddMessageErrorDetails1796130561208603';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages ADD COLUMN error_subcode text NULL, ADD COLUMN error_details text NULL`);
    await q.query(`ALTER TABLE pending_statuses ADD COLUMN error_details text NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE pending_statuses DROP COLUMN error_details`);
    await q.query(`ALTER TABLE messages DROP COLUMN error_subcode, DROP COLUMN error_details`);
  }
}
