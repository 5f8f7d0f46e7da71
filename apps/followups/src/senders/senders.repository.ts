import { Injectable } from '@nestjs/common';
import type { OutboxSenderEventData } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

export interface SenderRow {
  sender_id: string;
  organization_id: string;
  channel: string;
  status: 'connected' | 'disconnected' | 'removed';
  is_default: boolean;
}

/** Read model of the dispatcher's senders, and the per-number pacing rows (seed 000 "number", "pacing"). */
@Injectable()
export class SendersRepository {
  /** Applies an `outbox.sender.*` event; an older event never overwrites a newer one. */
  async apply(db: Queryable, organizationId: string, data: OutboxSenderEventData, at: Date): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO senders AS s (sender_id, organization_id, channel, status, is_default, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (sender_id) DO UPDATE SET status = EXCLUDED.status, is_default = EXCLUDED.is_default, channel = EXCLUDED.channel, updated_at = EXCLUDED.updated_at
       WHERE s.updated_at <= EXCLUDED.updated_at AND s.organization_id = EXCLUDED.organization_id`,
      [data.sender_id, organizationId, data.channel, data.status, data.is_default ?? false, at],
    );
    if (data.is_default) {
      await rowsOf(db, `UPDATE senders SET is_default = false WHERE organization_id = $1 AND channel = $2 AND sender_id <> $3 AND is_default`, [organizationId, data.channel, data.sender_id]);
    }
    await rowsOf(db, `INSERT INTO sender_pacing (sender_id, next_release_at) VALUES ($1, 'epoch') ON CONFLICT DO NOTHING`, [data.sender_id]);
  }

  async find(db: Queryable, organizationId: string, senderId: string): Promise<SenderRow | undefined> {
    const [row] = await rowsOf<SenderRow>(db, `SELECT * FROM senders WHERE sender_id = $1 AND organization_id = $2`, [senderId, organizationId]);
    return row;
  }

  /** Which of `senderIds` are connected numbers of the organization on `channel` (one statement, in no order). */
  async connectedAmong(db: Queryable, organizationId: string, channel: string, senderIds: string[]): Promise<string[]> {
    const rows = await rowsOf<{ sender_id: string }>(db, `SELECT sender_id FROM senders WHERE organization_id = $1 AND channel = $2 AND status = 'connected' AND sender_id = ANY($3::uuid[])`, [organizationId, channel, senderIds]);
    return rows.map((r) => r.sender_id);
  }

  /**
   * Follow-up sends queued on a number that the provider has not yet accepted nor refused (effect
   * `queued`: handed to messaging and the dispatcher, no outcome reported), counted up to `limit`
   * only — the caller needs to know whether the window is full, not the size of a backlog. Reads
   * `effects_queued_by_sender_idx`. A statement of its own: run after lockPacing, its snapshot
   * includes the sends of a release of the same number that committed while this one took the lock.
   */
  async queuedSendsOn(db: Queryable, senderId: string, limit: number): Promise<number> {
    const [row] = await rowsOf<{ n: number }>(db, `SELECT count(*)::int AS n FROM (SELECT 1 FROM effects WHERE sender_id = $1 AND kind = 'send' AND status = 'queued' LIMIT $2) queued`, [senderId, limit]);
    return row?.n ?? 0;
  }

  /** The organization's default connected sender of the channel, else any connected one (oldest first). */
  async connectedFallback(db: Queryable, organizationId: string, channel: string): Promise<SenderRow | undefined> {
    const [row] = await rowsOf<SenderRow>(db, `SELECT * FROM senders WHERE organization_id = $1 AND channel = $2 AND status = 'connected' ORDER BY is_default DESC, updated_at, sender_id LIMIT 1`, [organizationId, channel]);
    return row;
  }

  /**
   * The number's pacing row, locked; SKIP LOCKED because a release busy on the same number must not
   * make another wait (seed 000 "pacing row SKIP LOCKED").
   * @returns next_release_at, or 'busy' when another release holds it
   */
  async lockPacing(db: Queryable, senderId: string): Promise<Date | 'busy'> {
    const [row] = await rowsOf<{ next_release_at: Date }>(db, `SELECT next_release_at FROM sender_pacing WHERE sender_id = $1 FOR UPDATE SKIP LOCKED`, [senderId]);
    if (row) return row.next_release_at;
    // No row yet (an event we have not seen): create it; a concurrent creator makes this one busy.
    const created = await rowsOf(db, `INSERT INTO sender_pacing (sender_id, next_release_at) VALUES ($1, 'epoch') ON CONFLICT DO NOTHING RETURNING sender_id`, [senderId]);
    return created.length ? new Date(0) : 'busy';
  }

  async setPacing(db: Queryable, senderId: string, nextReleaseAt: Date): Promise<void> {
    await rowsOf(db, `UPDATE sender_pacing SET next_release_at = $2 WHERE sender_id = $1`, [senderId, nextReleaseAt]);
  }
}
