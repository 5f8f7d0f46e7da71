import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The ai-gateway schema (DESIGN §4): `ai_runs` (idempotency key → result, with prompt version,
 * input hash, usage and latency), the monthly budget ledger and limits, and the prompt versions
 * seen in code.
 */
export class CreateAiTables1764600000000 implements MigrationInterface {
  name = 'CreateAiTables1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_runs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        idempotency_key text NOT NULL,
        kind text NOT NULL,
        status text NOT NULL CHECK (status IN ('running', 'ok', 'invalid_output', 'unavailable', 'timeout', 'budget_exhausted')),
        attempt integer NOT NULL DEFAULT 1,
        lease_expires_at timestamptz NULL,
        prompt_version text NOT NULL,
        input_sha256 text NOT NULL,
        model text NULL,
        output jsonb NULL,
        raw_output text NULL,
        reason text NULL,
        prompt_tokens integer NULL,
        completion_tokens integer NULL,
        total_tokens integer NULL,
        cost_usd numeric(14, 6) NULL,
        latency_ms integer NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        finished_at timestamptz NULL,
        CONSTRAINT ai_runs_idempotency_key UNIQUE (organization_id, idempotency_key)
      )`);
    await q.query(`CREATE INDEX ai_runs_organization_created_idx ON ai_runs (organization_id, created_at)`);
    await q.query(`
      CREATE TABLE ai_budget_ledger (
        organization_id text NOT NULL,
        kind text NOT NULL,
        month text NOT NULL CHECK (month ~ '^[0-9]{4}-[0-9]{2}$'),
        requests integer NOT NULL DEFAULT 0,
        prompt_tokens bigint NOT NULL DEFAULT 0,
        completion_tokens bigint NOT NULL DEFAULT 0,
        total_tokens bigint NOT NULL DEFAULT 0,
        cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (organization_id, kind, month)
      )`);
    await q.query(`
      CREATE TABLE ai_budget_limits (
        organization_id text NOT NULL,
        kind text NOT NULL,
        monthly_tokens bigint NULL CHECK (monthly_tokens >= 0),
        monthly_cost_usd numeric(14, 6) NULL CHECK (monthly_cost_usd >= 0),
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (organization_id, kind)
      )`);
    await q.query(`
      CREATE TABLE ai_prompt_versions (
        version text PRIMARY KEY,
        kind text NOT NULL,
        template_sha256 text NOT NULL,
        first_seen_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_prompt_versions`);
    await q.query(`DROP TABLE ai_budget_limits`);
    await q.query(`DROP TABLE ai_budget_ledger`);
    await q.query(`DROP TABLE ai_runs`);
  }
}
