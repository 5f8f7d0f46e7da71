import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outcome sweep (seed 004 "Dispatch is woken …, drained by cron") asks the dispatcher about
 * outbound messages still waiting for an outcome. `outcome_checked_at` is when it last asked, so
 * a message whose entry is still pending goes to the back of the line instead of being asked
 * about on every pass; the partial index holds only the messages that wait.
 */
export class AddOutcomeCheckedAt1796130380417 implements MigrationInterface {
  name = 'AddOutcomeCheckedAt1796130380417';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages ADD COLUMN outcome_checked_at timestamptz NULL`);
    await q.query(
      `CREATE INDEX messages_awaiting_outcome_idx ON messages (outcome_checked_at NULLS FIRST, created_at)
        WHERE direction = 'outbound' AND status IN ('queued', 'ambiguous')`,
    );
    await q.query(`CREATE INDEX notification_deliveries_pending_idx ON notification_deliveries (created_at) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX notification_deliveries_pending_idx`);
    await q.query(`DROP INDEX messages_awaiting_outcome_idx`);
    await q.query(`ALTER TABLE messages DROP COLUMN outcome_checked_at`);
  }
}
