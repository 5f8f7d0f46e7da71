import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf, type Tx } from '@touchpoint/database';
import type { OutboxChannel } from '@touchpoint/contracts';

/** A sender row (credentials still encrypted). */
export interface SenderRow {
  id: string;
  organization_id: string;
  channel: OutboxChannel;
  label: string | null;
  phone_number_id: string | null;
  display_phone_number: string | null;
  business_account_id: string | null;
  address: string | null;
  credentials_encrypted: string;
  status: 'connected' | 'disconnected';
  /** Why the dispatcher disconnected it by itself (`token_invalid`), null otherwise. */
  status_reason?: string | null;
  /** Sends from this number wait until then (an asynchronous rate-limit error), UTC. */
  paused_until?: Date | null;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
  removed_at: Date | null;
}

/** Which sender of a channel an enqueue without `sender_id` uses: an explicit default wins; otherwise the oldest connected one. */
const DEFAULT_SENDER_ORDER = `s.is_default DESC, (s.status = 'connected') DESC, s.created_at`;

/** Every SQL statement about senders. Removed senders stay as rows (entries reference them). */
@Injectable()
export class SendersRepository {
  async insert(tx: Tx, row: Omit<SenderRow, 'removed_at' | 'updated_at'>): Promise<SenderRow> {
    const [created] = await rowsOf<SenderRow>(
      tx,
      `INSERT INTO senders (id, organization_id, channel, label, phone_number_id, display_phone_number, business_account_id, address,
                            credentials_encrypted, status, is_default, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING *`,
      [row.id, row.organization_id, row.channel, row.label, row.phone_number_id, row.display_phone_number, row.business_account_id, row.address, row.credentials_encrypted, row.status, row.is_default, row.created_at],
    );
    return created;
  }

  async find(tx: Tx, organizationId: string, senderId: string, forUpdate = false): Promise<SenderRow | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(senderId)) return undefined;
    const [row] = await rowsOf<SenderRow>(tx, `SELECT * FROM senders WHERE id = $1 AND organization_id = $2 AND removed_at IS NULL ${forUpdate ? 'FOR UPDATE' : ''}`, [senderId, organizationId]);
    return row;
  }

  /** Any sender by id, removed or not (the drain needs the row of a sender removed after enqueue). */
  async findAny(tx: Tx, senderId: string): Promise<SenderRow | undefined> {
    const [row] = await rowsOf<SenderRow>(tx, `SELECT * FROM senders WHERE id = $1`, [senderId]);
    return row;
  }

  async findDefault(tx: Tx, organizationId: string, channel: OutboxChannel): Promise<SenderRow | undefined> {
    const [row] = await rowsOf<SenderRow>(tx, `SELECT * FROM senders s WHERE s.organization_id = $1 AND s.channel = $2 AND s.removed_at IS NULL ORDER BY ${DEFAULT_SENDER_ORDER} LIMIT 1`, [organizationId, channel]);
    return row;
  }

  /**
   * `find` and `findDefault` for a consumer batch of enqueues, in one statement: the senders of
   * `ids` (any organization: the caller matches it), and each (organization, channel)'s default
   * as `findDefault` picks it, marked `as_default`. `ids` must be uuids.
   */
  async findForEnqueue(tx: Tx, ids: string[], defaults: { organizationId: string; channel: OutboxChannel }[]): Promise<(SenderRow & { as_default: boolean })[]> {
    if (ids.length === 0 && defaults.length === 0) return [];
    return rowsOf<SenderRow & { as_default: boolean }>(
      tx,
      `SELECT false AS as_default, s.* FROM senders s WHERE s.id = ANY($1::uuid[]) AND s.removed_at IS NULL
       UNION ALL
       SELECT true, d.* FROM unnest($2::text[], $3::text[]) AS w (organization_id, channel)
       CROSS JOIN LATERAL (
         SELECT * FROM senders s WHERE s.organization_id = w.organization_id AND s.channel = w.channel AND s.removed_at IS NULL
          ORDER BY ${DEFAULT_SENDER_ORDER} LIMIT 1
       ) d`,
      [ids, defaults.map((d) => d.organizationId), defaults.map((d) => d.channel)],
    );
  }

  async findByPhoneNumberId(tx: Tx, phoneNumberId: string): Promise<SenderRow | undefined> {
    const [row] = await rowsOf<SenderRow>(tx, `SELECT * FROM senders WHERE phone_number_id = $1 AND removed_at IS NULL`, [phoneNumberId]);
    return row;
  }

  async list(tx: Tx, organizationId: string, channel?: OutboxChannel): Promise<SenderRow[]> {
    return rowsOf<SenderRow>(tx, `SELECT * FROM senders WHERE organization_id = $1 AND removed_at IS NULL AND ($2::text IS NULL OR channel = $2) ORDER BY created_at`, [organizationId, channel ?? null]);
  }

  /** Drops the default flag of the organization's other senders of the channel (one default each); `now` also stamps `updated_at`. */
  async clearDefault(tx: Tx, organizationId: string, channel: OutboxChannel, exceptId: string, now?: Date): Promise<void> {
    if (now) await rowsOf(tx, `UPDATE senders SET is_default = false, updated_at = $4 WHERE organization_id = $1 AND channel = $2 AND id <> $3 AND is_default AND removed_at IS NULL`, [organizationId, channel, exceptId, now]);
    else await rowsOf(tx, `UPDATE senders SET is_default = false WHERE organization_id = $1 AND channel = $2 AND id <> $3 AND is_default AND removed_at IS NULL`, [organizationId, channel, exceptId]);
  }

  /** Whether the organization has a live default sender of the channel. */
  async hasDefault(tx: Tx, organizationId: string, channel: OutboxChannel): Promise<boolean> {
    const [row] = await rowsOf<{ n: number }>(tx, `SELECT count(*)::int AS n FROM senders WHERE organization_id = $1 AND channel = $2 AND removed_at IS NULL AND is_default`, [organizationId, channel]);
    return row!.n > 0;
  }

  /**
   * Inserts a connected mailbox or LinkedIn account. The account id is unique among live senders:
   * a second live sender of it fails with a unique violation.
   */
  async insertAccount(tx: Tx, a: { id: string; organizationId: string; channel: 'email' | 'linkedin'; label: string | null; address: string; credentialsEncrypted: string; isDefault: boolean; accountId: string; provider: string | null; now: Date }): Promise<SenderRow> {
    const [row] = await rowsOf<SenderRow>(
      tx,
      `INSERT INTO senders (id, organization_id, channel, label, address, credentials_encrypted, status, is_default, provider_account_id, account_provider, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'connected', $7, $8, $9, $10, $10) RETURNING *`,
      [a.id, a.organizationId, a.channel, a.label, a.address, a.credentialsEncrypted, a.isDefault, a.accountId, a.provider, a.now],
    );
    return row!;
  }

  /** The live sender of a provider account on the channel, or undefined. */
  async findByProviderAccount(db: Queryable, channel: 'email' | 'linkedin', accountId: string): Promise<Pick<SenderRow, 'id' | 'organization_id' | 'address'> | undefined> {
    const [row] = await rowsOf<Pick<SenderRow, 'id' | 'organization_id' | 'address'>>(db, `SELECT id, organization_id, address FROM senders WHERE channel = $1 AND provider_account_id = $2 AND removed_at IS NULL`, [channel, accountId]);
    return row;
  }

  async update(tx: Tx, id: string, changes: Partial<Pick<SenderRow, 'label' | 'display_phone_number' | 'business_account_id' | 'credentials_encrypted' | 'status' | 'status_reason' | 'is_default'>>, now: Date): Promise<SenderRow> {
    const columns = Object.keys(changes) as (keyof typeof changes)[];
    const sets = columns.map((c, i) => `${c} = $${i + 3}`);
    const [row] = await rowsOf<SenderRow>(tx, `UPDATE senders SET ${[...sets, 'updated_at = $2'].join(', ')} WHERE id = $1 RETURNING *`, [id, now, ...columns.map((c) => changes[c])]);
    return row;
  }

  /**
   * Disconnects a connected sender because its token no longer works; undefined when it was not
   * connected any more (another dispatcher got there first, or a person changed it).
   */
  async disconnectForReason(tx: Tx, id: string, reason: string, now: Date): Promise<SenderRow | undefined> {
    const [row] = await rowsOf<SenderRow>(tx, `UPDATE senders SET status = 'disconnected', status_reason = $2, updated_at = $3 WHERE id = $1 AND status = 'connected' AND removed_at IS NULL RETURNING *`, [id, reason, now]);
    return row;
  }

  /** Keeps one error of a WhatsApp webhook error batch (`sender` null when no live sender has the number). */
  async recordWebhookError(tx: Tx, e: { organizationId: string | null; senderId: string | null; phoneNumberId: string; code: number; title: string | null; details: string | null; body: string; pausedUntil: Date | null; receivedAt: Date }): Promise<void> {
    await rowsOf(
      tx,
      `INSERT INTO whatsapp_webhook_errors (organization_id, sender_id, phone_number_id, code, title, details, body, paused_until, received_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [e.organizationId, e.senderId, e.phoneNumberId, e.code, e.title, e.details, e.body, e.pausedUntil, e.receivedAt],
    );
  }

  /** Pushes the sender's pause to at least `until`; returns the pause now in force. */
  async pauseUntil(tx: Tx, id: string, until: Date): Promise<Date> {
    const [row] = await rowsOf<{ paused_until: Date }>(tx, `UPDATE senders SET paused_until = GREATEST(COALESCE(paused_until, $2), $2) WHERE id = $1 RETURNING paused_until`, [id, until]);
    return row?.paused_until ?? until;
  }

  async markRemoved(tx: Tx, id: string, now: Date): Promise<void> {
    await rowsOf(tx, `UPDATE senders SET removed_at = $2, updated_at = $2, is_default = false, status = 'disconnected' WHERE id = $1`, [id, now]);
  }
}
