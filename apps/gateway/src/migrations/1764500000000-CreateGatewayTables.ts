import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tenancy tables (DESIGN §3): organizations, their members, and the API keys members create.
 * A key's secret is never stored, only its SHA-256 (`secret_hash`), which is unique so the auth
 * lookup is one index probe.
 */
export class CreateGatewayTables1764500000000 implements MigrationInterface {
  name = 'CreateGatewayTables1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE organizations (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE members (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id uuid NOT NULL REFERENCES organizations (id),
        email text NOT NULL,
        name text NULL,
        role text NOT NULL CONSTRAINT members_role_check CHECK (role IN ('admin', 'operator')),
        active boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        -- emails are stored lower-cased, so this is a case-insensitive uniqueness
        CONSTRAINT members_organization_email_key UNIQUE (organization_id, email)
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id uuid NOT NULL REFERENCES organizations (id),
        created_by_member_id uuid NOT NULL REFERENCES members (id),
        name text NOT NULL,
        secret_hash bytea NOT NULL,
        secret_hint text NOT NULL,
        scopes text[] NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz NULL,
        revoked_at timestamptz NULL,
        CONSTRAINT api_keys_secret_hash_key UNIQUE (secret_hash)
      )`);
    await q.query(`CREATE INDEX api_keys_organization_idx ON api_keys (organization_id, created_at)`);
    await q.query(`CREATE INDEX api_keys_created_by_idx ON api_keys (created_by_member_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE api_keys`);
    await q.query(`DROP TABLE members`);
    await q.query(`DROP TABLE organizations`);
  }
}
