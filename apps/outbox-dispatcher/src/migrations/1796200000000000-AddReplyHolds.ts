import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The reply hold: an entry says whether a reply of its recipient stops it
 * (`stop_on_reply`, false for every entry written before). The hold's update of pending entries
 * (`ReplyHoldRepository.hold`) rides `message_outbox_pending_recipient_idx`; no index of its own.
 */
export class AddReplyHolds1796200000000000 implements MigrationInterface {
  name = 'AddReplyHolds1796200000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE message_outbox ADD COLUMN stop_on_reply boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE message_outbox DROP COLUMN stop_on_reply`);
  }
}
