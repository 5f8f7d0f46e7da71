import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';
import type { ProspectClaim } from './prospect-cap.service.js';

/** What the read-only check of the prospect cap found (see `ProspectCapRepository.peek`). */
export interface ProspectCapPeek {
  /** The mailbox the email would go from, or null when the organization has none. */
  sender_id: string | null;
  prospect: boolean;
  /** Prospect emails the mailbox sent on the UTC day of `now`. */
  sent: number;
  /** The organization's cap per mailbox and UTC day. */
  cap: number;
}

/**
 * Every SQL statement of the daily prospect cap (seed 003 §6): `prospect_cap_settings`,
 * `prospect_send_counters` through `claim_prospect_email_send`, and `email_correspondents`, the
 * dispatcher's read model of who is not a prospect. Addresses arrive trimmed and lower-cased.
 */
@Injectable()
export class ProspectCapRepository {
  /** Counts the send of `entryId` against its mailbox's UTC day, or refuses it: one statement (see its migration). */
  async claim(db: Queryable, c: { entryId: string; organizationId: string; senderId: string; address: string; now: Date; defaultPerDay: number }): Promise<ProspectClaim> {
    const [row] = await rowsOf<{ outcome: ProspectClaim }>(db, `SELECT claim_prospect_email_send($1, $2, $3, $4, $5, $6) AS outcome`, [c.entryId, c.organizationId, c.senderId, c.address, c.now, c.defaultPerDay]);
    return row!.outcome;
  }

  /**
   * The same rules as `claim_prospect_email_send`, read only. Null sender → the organization's
   * default mailbox.
   */
  async peek(db: Queryable, organizationId: string, senderId: string | null, address: string, now: Date, defaultPerDay: number): Promise<ProspectCapPeek> {
    const [row] = await rowsOf<ProspectCapPeek>(
      db,
      `WITH s AS (
         SELECT id FROM senders
          WHERE organization_id = $1 AND channel = 'email' AND removed_at IS NULL AND ($2::uuid IS NULL AND is_default OR id = $2::uuid)
          LIMIT 1)
       SELECT (SELECT id FROM s) AS sender_id,
              NOT EXISTS (
                SELECT 1 FROM email_correspondents c
                 WHERE c.organization_id = $1 AND c.address = $3
                   AND (c.wrote_in OR (c.crm_person AND EXISTS (
                         SELECT 1 FROM message_outbox m WHERE m.organization_id = $1 AND m.channel = 'email' AND m.status = 'accepted' AND m.pacing_key = $3)))) AS prospect,
              COALESCE((SELECT sent FROM prospect_send_counters WHERE sender_id = (SELECT id FROM s) AND day = ($4::timestamptz AT TIME ZONE 'UTC')::date), 0) AS sent,
              COALESCE((SELECT prospect_emails_per_day FROM prospect_cap_settings WHERE organization_id = $1), $5) AS cap`,
      [organizationId, senderId, address, now, defaultPerDay],
    );
    return row!;
  }

  /** The organization's own cap per mailbox and day, or null when it uses the default. */
  async organizationCap(db: Queryable, organizationId: string): Promise<number | null> {
    const [row] = await rowsOf<{ prospect_emails_per_day: number }>(db, `SELECT prospect_emails_per_day FROM prospect_cap_settings WHERE organization_id = $1`, [organizationId]);
    return row ? row.prospect_emails_per_day : null;
  }

  /** Sets the organization's cap; null deletes it (back to the default). */
  async setOrganizationCap(db: Queryable, organizationId: string, perDay: number | null, now: Date): Promise<void> {
    if (perDay === null) await rowsOf(db, `DELETE FROM prospect_cap_settings WHERE organization_id = $1`, [organizationId]);
    else
      await rowsOf(
        db,
        `INSERT INTO prospect_cap_settings (organization_id, prospect_emails_per_day, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (organization_id) DO UPDATE SET prospect_emails_per_day = EXCLUDED.prospect_emails_per_day, updated_at = EXCLUDED.updated_at`,
        [organizationId, perDay, now],
      );
  }

  /** Marks an address as having written to the organization (an inbound email). */
  async markWroteIn(db: Queryable, organizationId: string, address: string, now: Date): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO email_correspondents (organization_id, address, wrote_in, updated_at) VALUES ($1, $2, true, $3)
       ON CONFLICT (organization_id, address) DO UPDATE SET wrote_in = true, updated_at = EXCLUDED.updated_at`,
      [organizationId, address, now],
    );
  }

  /** Records an address of a messaging contact; once a CRM person, it stays one. */
  async markContact(db: Queryable, organizationId: string, address: string, crmPerson: boolean, now: Date): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO email_correspondents (organization_id, address, crm_person, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, address) DO UPDATE SET crm_person = email_correspondents.crm_person OR EXCLUDED.crm_person, updated_at = EXCLUDED.updated_at`,
      [organizationId, address, crmPerson, now],
    );
  }
}
