import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cancellations that arrived before their entry (DESIGN §5.3, "the reply wins"): a requester's
 * `outbox.cancel` can overtake the `outbox.enqueue` that travels through messaging, so the cancel
 * is kept by key and the late enqueue is written already cancelled instead of being sent.
 */
export class CreateOutboxCancellations1764900000000 implements MigrationInterface {
  name = 'CreateOutboxCancellations1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE message_outbox_cancellations (
        organization_id text NOT NULL,
        idempotency_key text NOT NULL,
        cancelled_at timestamptz NOT NULL,
        PRIMARY KEY (organization_id, idempotency_key)
      )`);
    await q.query(`CREATE INDEX message_outbox_cancellations_at_idx ON message_outbox_cancellations (cancelled_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE message_outbox_cancellations`);
  }
}
