import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rule triggers (seed 000 "Rules"): one small row per event that an enabled rule may match,
 * recorded in the event's own transaction, claimed in batches by the trigger loop. Unique per
 * (organization, event, type): a redelivered event records nothing new.
 */
export class CreateTriggers1764830000000 implements MigrationInterface {
  name = 'CreateTriggers1764830000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE triggers (
        id bigserial PRIMARY KEY,
        organization_id uuid NOT NULL,
        type text NOT NULL,
        event_id text NOT NULL,
        contact_id uuid NOT NULL,
        data jsonb NOT NULL DEFAULT '{}',
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        processed_at timestamptz NULL,
        outcome jsonb NULL,
        last_error text NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT triggers_event_key UNIQUE (organization_id, event_id, type)
      )`);
    await q.query(`CREATE INDEX triggers_pending_idx ON triggers (next_attempt_at, id) WHERE processed_at IS NULL`);
    await q.query(`CREATE INDEX triggers_processed_idx ON triggers (processed_at) WHERE processed_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE triggers`);
  }
}
