import { Injectable } from '@nestjs/common';
import type { MessagingStreamItem } from '@touchpoint/contracts';
import { CommitBatch, type Tx } from '@touchpoint/database';

/** A feed item waiting for its transaction's commit; `data` already JSON (as it was when appended). */
interface PendingItem {
  organization_id: string;
  type: string;
  data: string;
}

/**
 * The real-time feed: one row per change others may watch live, written in the
 * transaction of the change, so an item exists if and only if the change committed.
 */
@Injectable()
export class StreamRepository {
  private readonly pending = new CommitBatch<PendingItem>((tx, items) => this.insert(tx, items));

  /**
   * Appends a feed item in the caller's transaction. The items of one transaction are inserted
   * together, in the order appended, right before it commits (`CommitBatch`): a consumer batch of
   * status changes writes one statement, and an item still exists if and only if its change
   * committed. `data` is taken as it is now (later changes to the object are not seen).
   */
  async append(tx: Tx, organizationId: string, type: string, data: object): Promise<void> {
    this.pending.add(tx, { organization_id: organizationId, type, data: JSON.stringify(data) });
  }

  private async insert(tx: Tx, items: PendingItem[]): Promise<void> {
    // unnest yields the rows in array order, so the ids keep the order of the appends.
    await tx.query(`INSERT INTO stream_events (organization_id, type, data) SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])`, [items.map((i) => i.organization_id), items.map((i) => i.type), items.map((i) => i.data)]);
  }

  /** Items of an organization after `afterId`, oldest first, filtered by type (exact or prefix ending in '.'). */
  async readAfter(tx: Tx, organizationId: string, afterId: string, types: string[], limit: number): Promise<MessagingStreamItem[]> {
    const exact = types.filter((t) => !t.endsWith('.'));
    const prefixes = types.filter((t) => t.endsWith('.')).map((t) => `${t.replace(/[%_\\]/g, '\\$&')}%`);
    const rows = await tx.query<{ id: string; type: string; occurred_at: Date; data: Record<string, unknown> }>(
      `SELECT id::text AS id, type, occurred_at, data FROM stream_events
        WHERE organization_id = $1 AND id > $2::bigint
          AND (cardinality($3::text[]) + cardinality($4::text[]) = 0 OR type = ANY($3::text[]) OR type LIKE ANY($4::text[]))
        ORDER BY id LIMIT $5`,
      [organizationId, afterId, exact, prefixes, limit],
    );
    return rows.map((r) => ({ id: r.id, type: r.type, occurred_at: new Date(r.occurred_at).toISOString(), data: r.data }));
  }

  /** The newest id overall (the starting cursor of a client that gave none). */
  async latestId(tx: Tx): Promise<string> {
    const [row] = await tx.query<{ id: string | null }>(`SELECT max(id)::text AS id FROM stream_events`);
    return row.id ?? '0';
  }

  /** The oldest id still kept (a resume from before it has missed items). */
  async oldestId(tx: Tx): Promise<string | null> {
    const [row] = await tx.query<{ id: string | null }>(`SELECT min(id)::text AS id FROM stream_events`);
    return row.id;
  }

  async prune(tx: Tx, before: Date): Promise<number> {
    const rows = await tx.query(`DELETE FROM stream_events WHERE occurred_at < $1 RETURNING id`, [before]);
    return Array.isArray(rows[0]) ? (rows[0] as unknown[]).length : rows.length;
  }
}
