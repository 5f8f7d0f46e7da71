import { Injectable } from '@nestjs/common';
import { cursorAtSql, type Tx } from '@touchpoint/database';
import type { Evidence, EntryRow } from '../drain/outbox.repository.js';
import { rowsOf } from '@touchpoint/database';

/**
 * Ambiguous sends and their resolution (seed 004 `evidence_recorded`): correlation evidence,
 * settling an ambiguous entry, the operator's list, and the provider statuses that resolve them.
 */
@Injectable()
export class AmbiguousRepository {
  /** Stores correlation evidence on a row still sending (no state change). */
  async recordEvidence(tx: Tx, entryId: string, evidence: Evidence, now: Date): Promise<void> {
    await rowsOf(tx, `UPDATE message_outbox SET evidence = $2, updated_at = $3 WHERE id = $1`, [entryId, JSON.stringify(evidence), now]);
  }

  /** Settles an ambiguous entry. Undefined when it is not ambiguous any more. */
  async settleAmbiguous(
    tx: Tx,
    entryId: string,
    to: 'accepted' | 'failed',
    fields: { providerMessageId: string | null; resolution: 'accepted' | 'rejected'; note: string | null; resolvedBy: string; errorCode?: string | null; errorMessage?: string | null },
    now: Date,
  ): Promise<EntryRow | undefined> {
    const [row] = await rowsOf<EntryRow>(
      tx,
      `UPDATE message_outbox
          SET status = $2, provider_message_id = COALESCE($3, provider_message_id), resolution = $4, resolution_note = $5, resolved_by = $6,
              last_error_code = COALESCE($7, last_error_code), last_error_message = COALESCE($8, last_error_message),
              settled_at = $9, updated_at = $9
        WHERE id = $1 AND status = 'ambiguous' RETURNING *`,
      [entryId, to, fields.providerMessageId, fields.resolution, fields.note, fields.resolvedBy, fields.errorCode ?? null, fields.errorMessage ?? null, now],
    );
    return row;
  }

  /**
   * Ambiguous entries, oldest first, of one organization (or all: the platform operator), after the
   * keyset position `after` (`created_at` to the microsecond, then id), with each row's cursor
   * position in `cursor_at`.
   */
  async listAmbiguous(tx: Tx, organizationId: string | undefined, limit: number, after: { createdAt: string; id: string } | null = null): Promise<(EntryRow & { cursor_at: string })[]> {
    return rowsOf<EntryRow & { cursor_at: string }>(
      tx,
      `SELECT *, ${cursorAtSql('created_at')} AS cursor_at FROM message_outbox
        WHERE status = 'ambiguous' AND ($1::text IS NULL OR organization_id = $1)
          AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::uuid))
        ORDER BY created_at, id LIMIT $2`,
      [organizationId ?? null, limit, after?.createdAt ?? null, after?.id ?? null],
    );
  }

  /** Stores one provider status; false when that (message, status) was already stored. */
  async insertProviderStatus(tx: Tx, s: { channel: string; accountId: string; providerMessageId: string; status: string; providerTimestamp: Date; recipient: string | null; correlation: string | null; body: unknown }, now: Date): Promise<string | null> {
    const [row] = await rowsOf<{ id: string }>(
      tx,
      `INSERT INTO provider_statuses (channel, account_id, provider_message_id, status, provider_timestamp, recipient, correlation, body, received_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (provider_message_id, status) DO NOTHING RETURNING id`,
      [s.channel, s.accountId, s.providerMessageId, s.status, s.providerTimestamp, s.recipient, s.correlation, JSON.stringify(s.body), now],
    );
    return row ? String(row.id) : null;
  }

  async noteStatusOutcome(tx: Tx, statusId: string, entryId: string | null, outcome: string): Promise<void> {
    await rowsOf(tx, `UPDATE provider_statuses SET entry_id = $2, resolution_outcome = $3 WHERE id = $1`, [statusId, entryId, outcome]);
  }
}
