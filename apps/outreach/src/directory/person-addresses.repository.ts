import { Injectable } from '@nestjs/common';
import type { ContactView } from '@touchpoint/contracts';
import type { LiveEnrollment } from '../interrupts/interrupts.repository.js';
import { type Queryable, rowsOf } from '@touchpoint/database';
import type { ChannelValue } from './people.directory.js';

/** What the read model keeps of a person: their channel values and the contact's version. */
export type AddressFacts = Pick<ContactView, 'id' | 'email' | 'linkedin_url' | 'linkedin_provider_id'> & { updated_at: string | Date };

/**
 * `person_addresses`, outreach's indexed copy of the channel values of the people it enrolled
 * (seed 003 §4.7, "The match"; see the migration that creates it). A write never replaces a newer
 * one: `contact_updated_at` only moves forward.
 */
@Injectable()
export class PersonAddressesRepository {
  /** Inserts or refreshes a person's row (enrollment, every fresh read of the person). */
  async upsert(db: Queryable, organizationId: string, c: AddressFacts, now: Date): Promise<void> {
    await db.query(
      `INSERT INTO person_addresses (organization_id, person_id, email, linkedin_url, linkedin_provider_id, contact_updated_at, synced_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (organization_id, person_id) DO UPDATE
         SET email = EXCLUDED.email, linkedin_url = EXCLUDED.linkedin_url, linkedin_provider_id = EXCLUDED.linkedin_provider_id,
             contact_updated_at = EXCLUDED.contact_updated_at, synced_at = EXCLUDED.synced_at
       WHERE person_addresses.contact_updated_at <= EXCLUDED.contact_updated_at`,
      [organizationId, c.id, c.email ? c.email.trim().toLowerCase() : null, c.linkedin_url || null, c.linkedin_provider_id || null, new Date(c.updated_at), now],
    );
  }

  /** Refreshes the row of a person outreach already holds (messaging's contact events); others are ignored. */
  async refresh(db: Queryable, organizationId: string, c: AddressFacts, now: Date): Promise<void> {
    await db.query(
      `UPDATE person_addresses SET email = $3, linkedin_url = $4, linkedin_provider_id = $5, contact_updated_at = $6, synced_at = $7
        WHERE organization_id = $1 AND person_id = $2 AND contact_updated_at <= $6`,
      [organizationId, c.id, c.email ? c.email.trim().toLowerCase() : null, c.linkedin_url || null, c.linkedin_provider_id || null, new Date(c.updated_at), now],
    );
  }

  /** An erased person has no address left to match. */
  async clear(db: Queryable, organizationId: string, personId: string, now: Date): Promise<void> {
    await db.query(`UPDATE person_addresses SET email = NULL, linkedin_url = NULL, linkedin_provider_id = NULL, synced_at = $3 WHERE organization_id = $1 AND person_id = $2`, [organizationId, personId, now]);
  }

  /**
   * Every live enrollment of the organization whose person is one of `personIds` or holds one of
   * `values` now (seed 003 §4.7, "The match"), in one statement: the person ids through the live
   * index of enrollments, the values through the indexes of `person_addresses`. Id order.
   */
  async liveMatching(db: Queryable, organizationId: string, personIds: string[], values: ChannelValue[]): Promise<LiveEnrollment[]> {
    const emails = values.filter((v) => v.channel === 'email').map((v) => v.value.toLowerCase());
    const linkedin = values.filter((v) => v.channel === 'linkedin').map((v) => v.value);
    return rowsOf<LiveEnrollment>(
      db,
      `SELECT e.id, e.person_kind, e.person_id FROM enrollments e
        WHERE e.organization_id = $1 AND e.status IN ('active', 'needs_contact_data')
          AND (e.person_id = ANY($2::text[])
               OR e.person_id IN (SELECT p.person_id FROM person_addresses p WHERE p.organization_id = $1 AND p.email = ANY($3::text[])
                                  UNION SELECT p.person_id FROM person_addresses p WHERE p.organization_id = $1 AND p.linkedin_url = ANY($4::text[])
                                  UNION SELECT p.person_id FROM person_addresses p WHERE p.organization_id = $1 AND p.linkedin_provider_id = ANY($4::text[])))
        ORDER BY e.id`,
      [organizationId, personIds, emails, linkedin],
    );
  }

  /**
   * Live enrollments whose person has no row yet (enrolled before the read model existed), other
   * than `exceptPersonIds`: the match reads those people from messaging. Shrinks to none as their
   * decisions run.
   */
  async liveWithoutAddresses(db: Queryable, organizationId: string, exceptPersonIds: string[]): Promise<LiveEnrollment[]> {
    return rowsOf<LiveEnrollment>(
      db,
      `SELECT e.id, e.person_kind, e.person_id FROM enrollments e
        WHERE e.organization_id = $1 AND e.status IN ('active', 'needs_contact_data') AND NOT (e.person_id = ANY($2::text[]))
          AND NOT EXISTS (SELECT 1 FROM person_addresses p WHERE p.organization_id = e.organization_id AND p.person_id = e.person_id)
        ORDER BY e.id`,
      [organizationId, exceptPersonIds],
    );
  }
}
