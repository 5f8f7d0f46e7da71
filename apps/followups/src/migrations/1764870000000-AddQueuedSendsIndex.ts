import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The follow-up sends still waiting in the outbox, by contact: every stop path reads them in one
 * indexed statement to ask the dispatcher to cancel them, whatever their enrollment's status
 * (seed 000 "Stop paths and ordering": the reply wins until the send lane claims the message).
 * Partial, so it holds only the few sends in flight, not the history.
 */
export class AddQueuedSendsIndex1764870000000 implements MigrationInterface {
  name = 'AddQueuedSendsIndex1764870000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX effects_queued_sends_idx ON effects (contact_id) WHERE kind = 'send' AND status = 'queued'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX effects_queued_sends_idx`);
  }
}
