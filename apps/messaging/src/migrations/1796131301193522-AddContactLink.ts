import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `contacts.linked_contact_id`: a prospect's link to the CRM person they are (seed 003 §4.1: "a
 * prospect with a CRM link ─► the CRM person"; a save that links a CRM person is a promotion).
 * Null for every CRM contact and for an unlinked prospect.
 */
export class AddContactLink1796131301193522 implements MigrationInterface {
  name = 'AddContactLink1796131301193522';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE contacts ADD COLUMN linked_contact_id uuid NULL REFERENCES contacts (id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE contacts DROP COLUMN linked_contact_id`);
  }
}
