import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One-off returns (seed 002 "Retornos avulsos"): one scheduled resumption of a contact, at most one
 * pending per contact, idempotent by operation key, fired by the promise loop with a lease
 * (`locked_until` + `attempts` fence) around the model call.
 */
export class CreatePromises1764810000000 implements MigrationInterface {
  name = 'CreatePromises1764810000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE promises (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        conversation_id uuid NULL,
        agent_id uuid NULL,
        operation_key text NOT NULL,
        reason text NOT NULL,
        promise text NOT NULL,
        promised_at timestamptz NOT NULL,
        due_at timestamptz NOT NULL,
        outside_window text NOT NULL CHECK (outside_window IN ('alert', 'template')),
        template jsonb NULL,
        status text NOT NULL CHECK (status IN ('scheduled', 'turn_enqueued', 'template_pending', 'template_dispatching', 'alerted', 'completed', 'skipped', 'failed', 'unknown', 'cancelled')),
        locked_until timestamptz NULL,
        attempts integer NOT NULL DEFAULT 0,
        run jsonb NULL,
        alert jsonb NULL,
        resolution jsonb NULL,
        last_error text NULL,
        cancel_reason text NULL,
        fired_at timestamptz NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT promises_operation_key UNIQUE (organization_id, operation_key)
      )`);
    // A contact has at most one pending return (seed 002: another answers 409 already_pending).
    await q.query(`CREATE UNIQUE INDEX promises_one_pending_idx ON promises (organization_id, contact_id) WHERE status IN ('scheduled', 'turn_enqueued', 'template_pending', 'template_dispatching')`);
    // The loop's claim: due scheduled returns, and resumptions whose lease ran out.
    await q.query(`CREATE INDEX promises_due_idx ON promises (due_at) WHERE status IN ('scheduled', 'template_pending', 'turn_enqueued')`);
    await q.query(`CREATE INDEX promises_page_idx ON promises (organization_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE promises`);
  }
}
