import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * LinkedIn relations of each account (Unipile `new_relation`, seed 003 §4.2 "linkedin_state": an
 * accepted invitation makes the person `connected`, and wins over any other state).
 */
export class CreateLinkedinRelations1765100000001 implements MigrationInterface {
  name = 'CreateLinkedinRelations1765100000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE linkedin_relations (
        sender_id uuid NOT NULL REFERENCES senders (id),
        provider_id text NOT NULL,
        organization_id text NOT NULL,
        public_identifier text NULL,
        connected_at timestamptz NOT NULL,
        PRIMARY KEY (sender_id, provider_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE linkedin_relations`);
  }
}
