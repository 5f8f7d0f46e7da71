import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The do-not-contact list as people work it (the console's Operations page): a row gets a public id (the
 * list pages by a keyset cursor over `created_at` and it), the note and the member of a row added
 * by hand, and an index for the newest-first page. A removal (seed 003 §5: only a person removes
 * a row) is kept in `contact_suppression_removals` with that person's note, so who let an address
 * be contacted again, and why, outlives the row.
 */
export class RecordSuppressionNotes1796172528645801 implements MigrationInterface {
  name = 'RecordSuppressionNotes1796172528645801';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE contact_suppressions ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid(), ADD COLUMN note text NULL, ADD COLUMN added_by text NULL`);
    await q.query(`CREATE UNIQUE INDEX contact_suppressions_public_id_key ON contact_suppressions (public_id)`);
    await q.query(`CREATE INDEX contact_suppressions_page_idx ON contact_suppressions (organization_id, created_at DESC, public_id DESC)`);
    await q.query(`
      CREATE TABLE contact_suppression_removals (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        channel text NOT NULL,
        value text NOT NULL,
        reason text NULL,
        added_note text NULL,
        added_by text NULL,
        added_at timestamptz NOT NULL,
        note text NULL,
        removed_by text NULL,
        removed_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX contact_suppression_removals_value_idx ON contact_suppression_removals (organization_id, channel, value)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE contact_suppression_removals`);
    await q.query(`DROP INDEX contact_suppressions_page_idx`);
    await q.query(`DROP INDEX contact_suppressions_public_id_key`);
    await q.query(`ALTER TABLE contact_suppressions DROP COLUMN public_id, DROP COLUMN note, DROP COLUMN added_by`);
  }
}
