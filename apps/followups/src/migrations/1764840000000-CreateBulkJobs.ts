import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bulk enrollment jobs (seed 000 "followup_bulk_jobs (contact list or frozen segment rule, cursor,
 * lease)"): the contacts are frozen at creation; a worker holding the lease enrolls them chunk by
 * chunk, moving the cursor in the same transaction, so a crashed job resumes where it stopped.
 */
export class CreateBulkJobs1764840000000 implements MigrationInterface {
  name = 'CreateBulkJobs1764840000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE bulk_jobs (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        flow_id uuid NOT NULL REFERENCES flows (id) ON DELETE CASCADE,
        operation_key text NOT NULL,
        source jsonb NOT NULL,
        contact_ids uuid[] NOT NULL,
        total integer NOT NULL,
        cursor integer NOT NULL DEFAULT 0,
        enrolled integer NOT NULL DEFAULT 0,
        rejected jsonb NOT NULL DEFAULT '{}',
        status text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed')),
        lease_token uuid NULL,
        locked_until timestamptz NULL,
        last_error text NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz NULL,
        CONSTRAINT bulk_jobs_operation_key UNIQUE (organization_id, operation_key)
      )`);
    await q.query(`CREATE INDEX bulk_jobs_open_idx ON bulk_jobs (created_at) WHERE status IN ('pending', 'running')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE bulk_jobs`);
  }
}
