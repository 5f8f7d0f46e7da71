import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A suppression cancels every pending entry to its address, across senders (seed 003 §5): the
 * lookup by (organization, channel, recipient key) among pending entries gets its own small index.
 */
export class IndexPendingByRecipient1765300000000 implements MigrationInterface {
  name = 'IndexPendingByRecipient1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX message_outbox_pending_recipient_idx ON message_outbox (organization_id, channel, pacing_key) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX message_outbox_pending_recipient_idx`);
  }
}
