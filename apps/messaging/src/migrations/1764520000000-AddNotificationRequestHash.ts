import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fingerprint of the request that created a notification with an idempotency key, so a retry
 * of the same request answers the notification while another request with the key answers 409
 * `idempotency_conflict`. Rows from before this column have none and keep answering retries.
 */
export class AddNotificationRequestHash1764520000000 implements MigrationInterface {
  name = 'AddNotificationRequestHash1764520000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notifications ADD COLUMN request_hash text NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notifications DROP COLUMN request_hash`);
  }
}
