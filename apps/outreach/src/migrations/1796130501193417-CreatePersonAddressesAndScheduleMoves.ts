import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Two outreach-owned tables:
 *
 * `person_addresses`, outreach's read model of the channel values of each person it enrolled (the
 * email, the LinkedIn profile URL and member id), so the opt-out, unsubscribe and bounce match
 * (seed 003 §4.7, "The match": by person id and by current address) is one indexed query instead
 * of a read of every live enrollment's person from messaging. Written when a person is enrolled
 * and whenever outreach reads the person fresh (each decision), and kept current from messaging's
 * `messaging.contact.updated` / `erased` events; `contact_updated_at` keeps an older write from
 * replacing a newer one. Live enrollments that predate the table have no row: the match reads
 * those people from messaging until their next decision writes one.
 *
 * `schedule_moves`, each move of an enrollment's next check by an out-of-office auto-reply that
 * states a return date (one per enrollment and message), shown on the enrollment's timeline.
 */
export class CreatePersonAddressesAndScheduleMoves1796130501193417 implements MigrationInterface {
  name = 'CreatePersonAddressesAndScheduleMoves1796130501193417';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE person_addresses (
        organization_id text NOT NULL,
        person_id text NOT NULL,
        -- Lower case.
        email text NULL,
        linkedin_url text NULL,
        linkedin_provider_id text NULL,
        contact_updated_at timestamptz NOT NULL,
        synced_at timestamptz NOT NULL,
        PRIMARY KEY (organization_id, person_id)
      )`);
    await q.query(`CREATE INDEX person_addresses_email ON person_addresses (organization_id, email) WHERE email IS NOT NULL`);
    await q.query(`CREATE INDEX person_addresses_linkedin_url ON person_addresses (organization_id, linkedin_url) WHERE linkedin_url IS NOT NULL`);
    await q.query(`CREATE INDEX person_addresses_linkedin_id ON person_addresses (organization_id, linkedin_provider_id) WHERE linkedin_provider_id IS NOT NULL`);
    // The match's other half, the live enrollments of a set of person ids, is served by the
    // partial unique index enrollments_one_live_per_person (organization_id, person_id).

    await q.query(`
      CREATE TABLE schedule_moves (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        enrollment_id uuid NOT NULL REFERENCES enrollments (id),
        message_id text NOT NULL,
        -- The calendar date the auto-reply states (the writer's zone) and the words it was read from.
        return_date date NOT NULL,
        return_text text NOT NULL,
        time_zone text NOT NULL,
        previous_next_check_at timestamptz NULL,
        next_check_at timestamptz NOT NULL,
        -- Which bound applied: none, min (now + followup_min_days) or max (now + 30 days).
        bounded text NOT NULL CHECK (bounded IN ('none', 'min', 'max')),
        created_at timestamptz NOT NULL,
        CONSTRAINT schedule_moves_once UNIQUE (enrollment_id, message_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE schedule_moves`);
    await q.query(`DROP TABLE person_addresses`);
  }
}
