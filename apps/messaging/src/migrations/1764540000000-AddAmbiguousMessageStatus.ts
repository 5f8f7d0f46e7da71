import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An outbound message whose send outcome the dispatcher does not know (seed 004 "Ambiguity is
 * resolved by correlation") shows as `ambiguous`, with the outbox entry an operator resolves,
 * instead of `queued` forever.
 */
export class AddAmbiguousMessageStatus1764540000000 implements MigrationInterface {
  name = 'AddAmbiguousMessageStatus1764540000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages DROP CONSTRAINT messages_status_check`);
    await q.query(`ALTER TABLE messages ADD CONSTRAINT messages_status_check CHECK (status IN ('queued', 'ambiguous', 'sent', 'delivered', 'read', 'failed', 'cancelled', 'received'))`);
    await q.query(`ALTER TABLE messages ADD COLUMN outbox_entry_id uuid NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages DROP COLUMN outbox_entry_id`);
    // An ambiguous message was queued as far as the old statuses can say.
    await q.query(`UPDATE messages SET status = 'queued' WHERE status = 'ambiguous'`);
    await q.query(`ALTER TABLE messages DROP CONSTRAINT messages_status_check`);
    await q.query(`ALTER TABLE messages ADD CONSTRAINT messages_status_check CHECK (status IN ('queued', 'sent', 'delivered', 'read', 'failed', 'cancelled', 'received'))`);
  }
}
