import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The CRM events the ingress accepted, one row per CRM event id and organization: a redelivery of
 * the same event finds its row and is answered as a replay instead of being published again
 * (seed 000 "Trigger hooks": lead created / status, deal stage).
 */
export class CreateCrmEvents1796130303779417 implements MigrationInterface {
  name = 'CreateCrmEvents1796130303779417';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE crm_events (
        organization_id uuid NOT NULL,
        event_id text NOT NULL,
        type text NOT NULL,
        contact_id uuid NOT NULL,
        received_at timestamptz NOT NULL,
        PRIMARY KEY (organization_id, event_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE crm_events`);
  }
}
