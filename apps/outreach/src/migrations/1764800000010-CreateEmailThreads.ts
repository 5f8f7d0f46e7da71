import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The enrollment's Outreach email threads (seed 003 §4.7: email correlates by the threads of our
 * executed emails only). A thread id is learned from the first inbound that answers one of our
 * emails by its provider id; later messages of that thread correlate by the thread alone. A thread
 * the person starts is never here.
 */
export class CreateEmailThreads1764800000010 implements MigrationInterface {
  name = 'CreateEmailThreads1764800000010';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE email_threads (
        organization_id text NOT NULL,
        thread_id text NOT NULL,
        action_id uuid NOT NULL REFERENCES proposed_actions (id),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (organization_id, thread_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE email_threads`);
  }
}
