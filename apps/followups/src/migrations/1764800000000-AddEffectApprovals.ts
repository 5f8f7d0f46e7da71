import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approval and reconciliation of sends (seed 002 "Efeitos"): a send may wait for a decision
 * (`awaiting_decision` → `approved` | `rejected`), who decided is kept so the approval can be
 * re-checked before the send, and an uncertain send keeps the evidence it was reconciled with.
 */
export class AddEffectApprovals1764800000000 implements MigrationInterface {
  name = 'AddEffectApprovals1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE effects DROP CONSTRAINT effects_status_check`);
    await q.query(`
      ALTER TABLE effects ADD CONSTRAINT effects_status_check
        CHECK (status IN ('queued', 'sent', 'failed', 'cancelled', 'skipped', 'uncertain', 'done', 'awaiting_decision', 'approved', 'rejected'))`);
    await q.query(`
      ALTER TABLE effects
        ADD COLUMN decided_at timestamptz NULL,
        ADD COLUMN decided_by_api_key_id uuid NULL,
        ADD COLUMN decided_by_member_id uuid NULL,
        ADD COLUMN resolution jsonb NULL`);
    // The approval inbox: sends waiting for a person.
    await q.query(`CREATE INDEX effects_awaiting_idx ON effects (organization_id, created_at) WHERE status = 'awaiting_decision'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX effects_awaiting_idx`);
    await q.query(`ALTER TABLE effects DROP COLUMN decided_at, DROP COLUMN decided_by_api_key_id, DROP COLUMN decided_by_member_id, DROP COLUMN resolution`);
    await q.query(`DELETE FROM effects WHERE status IN ('awaiting_decision', 'approved', 'rejected')`);
    await q.query(`ALTER TABLE effects DROP CONSTRAINT effects_status_check`);
    await q.query(`ALTER TABLE effects ADD CONSTRAINT effects_status_check CHECK (status IN ('queued', 'sent', 'failed', 'cancelled', 'skipped', 'uncertain', 'done'))`);
  }
}
