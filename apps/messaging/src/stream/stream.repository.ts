import { Injectable } from '@nestjs/common';
import type { MessagingStreamItem } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';

/**
 * The real-time feed: one row per change others may watch live, written in the
 * transaction of the change, so an item exists if and only if the change committed.
 */
@Injectable()
export class StreamRepository {
  /** Appends a feed item in the caller's transaction. */
  async append(tx: Tx, organizationId: string, type: string, data: object): Promise<void> {
    await tx.query(`INSERT INTO stream_events (organization_id, type, data) VALUES ($1, $2, $3::jsonb)`, [organizationId, type, JSON.stringify(data)]);
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
