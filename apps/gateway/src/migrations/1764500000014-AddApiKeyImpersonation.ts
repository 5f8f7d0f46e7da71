import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Marks the API keys issued for support impersonation (seed 003 §4.5: an impersonated session may
 * not approve or reject). The mark is set when the key is created, by the admin CLI, and is part
 * of the credential: no request can add or remove it.
 */
export class AddApiKeyImpersonation1764500000014 implements MigrationInterface {
  name = 'AddApiKeyImpersonation1764500000014';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN impersonated_by text NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN impersonated_by`);
  }
}
