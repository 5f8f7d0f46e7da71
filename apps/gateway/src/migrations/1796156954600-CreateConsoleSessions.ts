import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sessions of the operator console: a member signs in with their API key and gets a
 * cookie. Neither the cookie's token nor its CSRF token is stored, only their SHA-256, so a copy
 * of this table signs nobody in. A session acts through its key: revoking the key ends it.
 */
export class CreateConsoleSessions1796156954600 implements MigrationInterface {
  name = 'CreateConsoleSessions1796156954600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE console_sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id uuid NOT NULL REFERENCES organizations (id),
        api_key_id uuid NOT NULL REFERENCES api_keys (id),
        member_id uuid NOT NULL REFERENCES members (id),
        token_hash bytea NOT NULL,
        csrf_hash bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz NULL,
        CONSTRAINT console_sessions_token_hash_key UNIQUE (token_hash)
      )`);
    await q.query(`CREATE INDEX console_sessions_api_key_idx ON console_sessions (api_key_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE console_sessions`);
  }
}
