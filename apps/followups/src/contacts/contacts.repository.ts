import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** A contact's activity as followups knows it (read model fed by messaging's events). */
export interface ContactActivity {
  organization_id: string;
  contact_id: string;
  name: string | null;
  phone: string | null;
  email: string | null;
  tags: string[];
  fields: Record<string, unknown>;
  /** The contact's IANA time zone as messaging knows it (null: unknown). */
  time_zone: string | null;
  last_inbound_at: Date | null;
  last_inbound_text: string | null;
  last_conversation_id: string | null;
  last_sender_id: string | null;
  opted_out_at: Date | null;
  handoff_at: Date | null;
  erased_at: Date | null;
}

/** Every SQL statement of the contacts read model. */
@Injectable()
export class ContactsRepository {
  /** Makes sure the row exists (the release loop's contact lock needs one). */
  async ensure(db: Queryable, organizationId: string, contactId: string): Promise<void> {
    await rowsOf(db, `INSERT INTO contacts (organization_id, contact_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [organizationId, contactId]);
  }

  /**
   * Writes the contact's row (creating it when followups has not seen the contact), so a release
   * of this contact in flight — which holds the row — is ordered with the caller's stop path.
   */
  async touch(db: Queryable, organizationId: string, contactId: string): Promise<void> {
    await rowsOf(db, `INSERT INTO contacts (organization_id, contact_id) VALUES ($1, $2) ON CONFLICT (organization_id, contact_id) DO UPDATE SET updated_at = now()`, [organizationId, contactId]);
  }

  /** `lock`: FOR SHARE, so a stop path's write of the row waits for the caller's transaction. */
  async find(db: Queryable, organizationId: string, contactId: string, lock = false): Promise<ContactActivity | undefined> {
    const [row] = await rowsOf<ContactActivity>(db, `SELECT * FROM contacts WHERE organization_id = $1 AND contact_id = $2${lock ? ' FOR SHARE' : ''}`, [organizationId, contactId]);
    return row;
  }

  /**
   * Records an inbound message (upsert; never moves last_inbound_at backwards). `senderId` is the
   * WhatsApp number it arrived on (null when unknown or another channel): the newest one known is
   * what sender mode `last_conversation` sends from.
   */
  async recordInbound(db: Queryable, c: { organizationId: string; contactId: string; at: Date; text: string | null; conversationId: string | null; senderId?: string | null; optOut: boolean }): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO contacts AS c (organization_id, contact_id, last_inbound_at, last_inbound_text, last_conversation_id, last_sender_id, opted_out_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $7, CASE WHEN $6 THEN $3::timestamptz END, now())
       ON CONFLICT (organization_id, contact_id) DO UPDATE SET
         last_inbound_at = greatest(c.last_inbound_at, EXCLUDED.last_inbound_at),
         last_inbound_text = CASE WHEN c.last_inbound_at IS NULL OR EXCLUDED.last_inbound_at >= c.last_inbound_at THEN EXCLUDED.last_inbound_text ELSE c.last_inbound_text END,
         last_conversation_id = coalesce(EXCLUDED.last_conversation_id, c.last_conversation_id),
         last_sender_id = CASE WHEN c.last_inbound_at IS NULL OR EXCLUDED.last_inbound_at >= c.last_inbound_at THEN coalesce(EXCLUDED.last_sender_id, c.last_sender_id) ELSE coalesce(c.last_sender_id, EXCLUDED.last_sender_id) END,
         opted_out_at = coalesce(c.opted_out_at, EXCLUDED.opted_out_at),
         updated_at = now()`,
      [c.organizationId, c.contactId, c.at, c.text, c.conversationId, c.optOut, c.senderId ?? null],
    );
  }

  async markOptedOut(db: Queryable, organizationId: string, contactId: string, at: Date): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO contacts AS c (organization_id, contact_id, opted_out_at) VALUES ($1, $2, $3)
       ON CONFLICT (organization_id, contact_id) DO UPDATE SET opted_out_at = coalesce(c.opted_out_at, EXCLUDED.opted_out_at), updated_at = now()`,
      [organizationId, contactId, at],
    );
  }

  async markHandoff(db: Queryable, organizationId: string, contactId: string, at: Date, conversationId: string | null): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO contacts AS c (organization_id, contact_id, handoff_at, last_conversation_id) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, contact_id) DO UPDATE SET handoff_at = greatest(c.handoff_at, EXCLUDED.handoff_at),
         last_conversation_id = coalesce(EXCLUDED.last_conversation_id, c.last_conversation_id), updated_at = now()`,
      [organizationId, contactId, at, conversationId],
    );
  }

  /** Erasure wipes the personal fields kept here too. */
  async markErased(db: Queryable, organizationId: string, contactId: string, at: Date): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO contacts AS c (organization_id, contact_id, erased_at) VALUES ($1, $2, $3)
       ON CONFLICT (organization_id, contact_id) DO UPDATE SET erased_at = EXCLUDED.erased_at, name = NULL, phone = NULL, email = NULL, time_zone = NULL,
         fields = '{}', last_inbound_text = NULL, updated_at = now()`,
      [organizationId, contactId, at],
    );
  }

  /**
   * Applies what a contact event tells (created, updated, tagged, untagged); absent fields stay.
   * `tags` is the contact's whole list as of `tagsAt` (the event's instant): a list older than the
   * one held is ignored, so events applied out of order never bring back an old list.
   */
  async upsertProfile(db: Queryable, p: { organizationId: string; contactId: string; name?: string | null; phone?: string | null; email?: string | null; tags?: string[]; tagsAt?: Date; timeZone?: string | null }): Promise<void> {
    const newerTags = `$6::text[] IS NOT NULL AND (c.tags_at IS NULL OR $10::timestamptz IS NULL OR $10::timestamptz >= c.tags_at)`;
    await rowsOf(
      db,
      `INSERT INTO contacts AS c (organization_id, contact_id, name, phone, email, tags, tags_at, time_zone) VALUES ($1, $2, $3, $4, $5, coalesce($6::text[], '{}'), $10::timestamptz, $11)
       ON CONFLICT (organization_id, contact_id) DO UPDATE SET
         time_zone = CASE WHEN $12 THEN EXCLUDED.time_zone ELSE c.time_zone END,
         name = CASE WHEN $7 THEN EXCLUDED.name ELSE c.name END,
         phone = CASE WHEN $8 THEN EXCLUDED.phone ELSE c.phone END,
         email = CASE WHEN $9 THEN EXCLUDED.email ELSE c.email END,
         tags = CASE WHEN ${newerTags} THEN $6::text[] ELSE c.tags END,
         tags_at = CASE WHEN ${newerTags} THEN coalesce($10::timestamptz, c.tags_at) ELSE c.tags_at END,
         updated_at = now()
       WHERE c.erased_at IS NULL`,
      [p.organizationId, p.contactId, p.name ?? null, p.phone ?? null, p.email ?? null, p.tags ?? null, p.name !== undefined, p.phone !== undefined, p.email !== undefined, p.tags ? (p.tagsAt ?? null) : null, p.timeZone ?? null, p.timeZone !== undefined],
    );
  }

  /** Adds or removes tags locally after a tag step (messaging stays the owner; its event confirms). */
  async applyTags(db: Queryable, organizationId: string, contactId: string, add: string[], remove: string[]): Promise<void> {
    await rowsOf(
      db,
      `UPDATE contacts SET tags = ARRAY(SELECT DISTINCT t FROM unnest(tags || $3::text[]) t WHERE t <> ALL($4::text[])), updated_at = now()
        WHERE organization_id = $1 AND contact_id = $2`,
      [organizationId, contactId, add, remove],
    );
  }
}
