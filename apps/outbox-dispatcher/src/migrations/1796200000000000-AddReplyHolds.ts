import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The reply hold (issue 17): an entry says whether a reply of its recipient stops it
 * (`stop_on_reply`, false for every entry written before), and `message_outbox_reply_holds` keeps,
 * per organization, channel and recipient key, until when such entries wait after the person
 * wrote (an entry enqueued during the hold is written held). One row per person who wrote; the
 * sweep deletes the expired ones. The hold's own update of pending entries rides
 * `message_outbox_pending_recipient_idx`.
 */
export class AddReplyHolds1796200000000000 implements MigrationInterface {
  name = 'AddReplyHolds1796200000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE message_outbox ADD COLUMN stop_on_reply boolean NOT NULL DEFAULT false`);
    await q.query(`
      CREATE TABLE message_outbox_reply_holds (
        organization_id text NOT NULL,
        channel text NOT NULL,
        pacing_key text NOT NULL,
        held_until timestamptz NOT NULL,
        PRIMARY KEY (organization_id, channel, pacing_key)
      )`);
    await q.query(`CREATE INDEX message_outbox_reply_holds_until_idx ON message_outbox_reply_holds (held_until)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE message_outbox_reply_holds`);
    await q.query(`ALTER TABLE message_outbox DROP COLUMN stop_on_reply`);
  }
}
