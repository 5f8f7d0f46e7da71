import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When messaging wrote the tags the contacts read model holds (the event's `occurred_at`): each
 * tag event carries the contact's whole tag list, and an older list arriving after a newer one
 * must not replace it.
 */
export class AddContactTagsAt1764860000000 implements MigrationInterface {
  name = 'AddContactTagsAt1764860000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE contacts ADD COLUMN tags_at timestamptz NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE contacts DROP COLUMN tags_at`);
  }
}
