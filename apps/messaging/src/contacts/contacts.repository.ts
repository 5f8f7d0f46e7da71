import { Injectable } from '@nestjs/common';
import type { ContactKind, ContactView } from '@touchpoint/contracts';
import { cursorAtSql, type CursorPosition, iso, type Queryable, rowsOf, type Tx } from '@touchpoint/database';

export interface ContactRow {
  id: string;
  organization_id: string;
  kind: ContactKind;
  name: string | null;
  phone: string | null;
  phone_key: string | null;
  email: string | null;
  email_key: string | null;
  linkedin_url: string | null;
  linkedin_provider_id: string | null;
  tags: string[];
  custom_fields: Record<string, unknown>;
  time_zone: string | null;
  user_type: string;
  /** A prospect's CRM person (seed 003 §4.1), else null. */
  linked_contact_id?: string | null;
  opted_out_at: Date | null;
  erased_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Fields a contact is written with (already normalised by the service). */
export interface ContactFields {
  kind: ContactKind;
  name: string | null;
  phone: string | null;
  phone_key: string | null;
  email: string | null;
  email_key: string | null;
  linkedin_url: string | null;
  linkedin_provider_id: string | null;
  tags: string[];
  custom_fields: Record<string, unknown>;
  time_zone: string | null;
  user_type: string;
}

const COLUMNS = ['kind', 'name', 'phone', 'phone_key', 'email', 'email_key', 'linkedin_url', 'linkedin_provider_id', 'tags', 'custom_fields', 'time_zone', 'user_type'] as const;

/** Every SQL statement about contacts. */
@Injectable()
export class ContactsRepository {
  /**
   * Inserts a contact unless one with the same phone or email key exists for the organization and
   * kind (the partial unique indexes); returns null on that conflict.
   */
  async insert(tx: Tx, organizationId: string, f: ContactFields, now: Date): Promise<ContactRow | null> {
    const rows = await tx.query<ContactRow>(
      `INSERT INTO contacts (organization_id, kind, name, phone, phone_key, email, email_key, linkedin_url, linkedin_provider_id, tags, custom_fields, time_zone, user_type, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text[], $11::jsonb, $12, $13, $14, $14)
       ON CONFLICT DO NOTHING
       RETURNING *`,
      [organizationId, f.kind, f.name, f.phone, f.phone_key, f.email, f.email_key, f.linkedin_url, f.linkedin_provider_id, f.tags, JSON.stringify(f.custom_fields), f.time_zone, f.user_type, now],
    );
    return rows[0] ?? null;
  }

  /** The contact (erased ones included); `lock` takes its row lock, inside a transaction only. */
  async findById(db: Queryable, organizationId: string, contactId: string, lock = false): Promise<ContactRow | null> {
    const rows = await db.query<ContactRow>(`SELECT * FROM contacts WHERE organization_id = $1 AND id = $2 ${lock ? 'FOR UPDATE' : ''}`, [organizationId, contactId]);
    return rows[0] ?? null;
  }

  /**
   * The live contact with this phone key, a CRM record before a prospect. `kind` is named (every
   * kind) so the lookup is an exact probe of `contacts_phone_uidx` (organization, kind, phone key)
   * rather than a scan of the organization's contacts.
   */
  async findByPhoneKey(tx: Tx, organizationId: string, phoneKey: string): Promise<ContactRow | null> {
    const rows = await tx.query<ContactRow>(`SELECT * FROM contacts WHERE organization_id = $1 AND kind IN ('crm', 'prospect') AND phone_key = $2 AND erased_at IS NULL ORDER BY (kind = 'crm') DESC, created_at LIMIT 1`, [organizationId, phoneKey]);
    return rows[0] ?? null;
  }

  async findByEmailKey(tx: Tx, organizationId: string, emailKey: string): Promise<ContactRow | null> {
    const rows = await tx.query<ContactRow>(`SELECT * FROM contacts WHERE organization_id = $1 AND kind IN ('crm', 'prospect') AND email_key = $2 AND erased_at IS NULL ORDER BY (kind = 'crm') DESC, created_at LIMIT 1`, [organizationId, emailKey]);
    return rows[0] ?? null;
  }

  async findByLinkedinId(tx: Tx, organizationId: string, providerId: string): Promise<ContactRow | null> {
    const rows = await tx.query<ContactRow>(`SELECT * FROM contacts WHERE organization_id = $1 AND linkedin_provider_id = $2 AND erased_at IS NULL ORDER BY (kind = 'crm') DESC, created_at LIMIT 1`, [organizationId, providerId]);
    return rows[0] ?? null;
  }

  async update(tx: Tx, organizationId: string, contactId: string, f: Partial<ContactFields>, now: Date): Promise<ContactRow | null> {
    const sets: string[] = [];
    const params: unknown[] = [organizationId, contactId, now];
    for (const column of COLUMNS) {
      if (!(column in f)) continue;
      const value = f[column];
      params.push(column === 'custom_fields' ? JSON.stringify(value) : value);
      sets.push(`${column} = $${params.length}${column === 'custom_fields' ? '::jsonb' : column === 'tags' ? '::text[]' : ''}`);
    }
    const result = await rowsOf<ContactRow>(tx, `UPDATE contacts SET ${[...sets, 'updated_at = $3'].join(', ')} WHERE organization_id = $1 AND id = $2 AND erased_at IS NULL RETURNING *`, params);
    return result[0] ?? null;
  }

  /** Sets or clears a prospect's link to its CRM person (the service checked both ends). */
  async setLink(tx: Tx, organizationId: string, contactId: string, linkedContactId: string | null, now: Date): Promise<ContactRow | null> {
    const result = await rowsOf<ContactRow>(tx, `UPDATE contacts SET linked_contact_id = $3, updated_at = $4 WHERE organization_id = $1 AND id = $2 AND erased_at IS NULL RETURNING *`, [organizationId, contactId, linkedContactId, now]);
    return result[0] ?? null;
  }

  /** Contacts newest first after a keyset cursor, optionally with a tag / of a kind. */
  async list(tx: Tx, organizationId: string, filter: { tag?: string; kind?: ContactKind; after?: CursorPosition | null; includeErased?: boolean }, limit: number): Promise<(ContactRow & { cursor_at: string })[]> {
    return tx.query<ContactRow & { cursor_at: string }>(
      `SELECT *, ${cursorAtSql('created_at')} AS cursor_at FROM contacts
        WHERE organization_id = $1
          AND ($2::text IS NULL OR tags @> ARRAY[$2::text])
          AND ($3::text IS NULL OR kind = $3)
          AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))
          AND ($6 OR erased_at IS NULL)
        ORDER BY created_at DESC, id DESC
        LIMIT $7`,
      [organizationId, filter.tag ?? null, filter.kind ?? null, filter.after?.createdAt ?? null, filter.after?.id ?? null, filter.includeErased ?? false, limit],
    );
  }

  /** Wipes every personal field of a contact and of its messages' bodies (right to erasure). */
  /**
   * Wipes the contact's personal fields and its messages' bodies and attachments. Answers the row
   * (null when it was erased already) and the idempotency keys of its outbound messages still
   * `queued`, whose outbox entries the caller cancels.
   */
  async erase(tx: Tx, organizationId: string, contactId: string, now: Date): Promise<{ row: ContactRow; queuedKeys: string[] } | null> {
    const result = await rowsOf<ContactRow>(
      tx,
      `UPDATE contacts SET name = NULL, phone = NULL, phone_key = NULL, email = NULL, email_key = NULL, linkedin_url = NULL,
              linkedin_provider_id = NULL, tags = '{}', custom_fields = '{}'::jsonb, time_zone = NULL, erased_at = $3, updated_at = $3
        WHERE organization_id = $1 AND id = $2 AND erased_at IS NULL RETURNING *`,
      [organizationId, contactId, now],
    );
    const row = result[0] ?? null;
    if (!row) return null;
    const wiped = await rowsOf<{ status: string; direction: string; idempotency_key: string | null }>(
      tx,
      `UPDATE messages SET body = NULL, subject = NULL, headers = NULL, payload = NULL WHERE organization_id = $1 AND contact_id = $2 RETURNING status, direction, idempotency_key`,
      [organizationId, contactId],
    );
    await tx.query(`DELETE FROM message_attachments WHERE message_id IN (SELECT id FROM messages WHERE organization_id = $1 AND contact_id = $2)`, [organizationId, contactId]);
    const queuedKeys = wiped.filter((m) => m.direction === 'outbound' && m.status === 'queued' && m.idempotency_key).map((m) => m.idempotency_key!);
    return { row, queuedKeys };
  }

  async markOptedOut(tx: Tx, contactId: string, now: Date): Promise<void> {
    await tx.query(`UPDATE contacts SET opted_out_at = COALESCE(opted_out_at, $2), updated_at = $2 WHERE id = $1`, [contactId, now]);
  }
}

export function toContactView(r: ContactRow): ContactView {
  return {
    id: r.id,
    organization_id: r.organization_id,
    kind: r.kind,
    name: r.name,
    phone: r.phone,
    email: r.email,
    linkedin_url: r.linkedin_url,
    linkedin_provider_id: r.linkedin_provider_id,
    linked_contact_id: r.linked_contact_id ?? null,
    tags: r.tags ?? [],
    custom_fields: r.custom_fields ?? {},
    time_zone: r.time_zone,
    user_type: r.user_type,
    opted_out_at: iso(r.opted_out_at),
    erased: r.erased_at !== null,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}
