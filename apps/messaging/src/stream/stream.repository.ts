import { Injectable } from '@nestjs/common';
import type { MessagingStreamItem } from '@touchpoint/contracts';
import { CommitBatch, type Statement, type Tx, genericPlan } from '@touchpoint/database';

/** A feed item waiting for its transaction's commit; `data` already JSON (as it was when appended). */
interface PendingItem {
  organization_id: string;
  type: string;
  data: string;
}

/**
 * The insert of a transaction's feed items, its last statement (run in the round trip of its
 * COMMIT). `locked` yields its one row only once every organization's lock is held (in one order,
 * so two transactions of the same organizations queue instead of deadlocking); each inserted row
 * waits for that row, so no id is drawn before the locks. WITH ORDINALITY keeps the appends' order.
 */
function insertStatement(items: PendingItem[]): Statement {
  return {
    sql: genericPlan(`WITH locked AS (
         SELECT count(pg_advisory_xact_lock(hashtext('stream_events:' || o))) AS n
           FROM (SELECT DISTINCT o FROM unnest($1::text[]) AS u(o) ORDER BY 1) s
       )
       INSERT INTO stream_events (organization_id, type, data)
       SELECT v.organization_id, v.type, v.data::jsonb
         FROM locked, unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS v(organization_id, type, data, n)
        ORDER BY v.n`),
    params: [items.map((i) => i.organization_id), items.map((i) => i.type), items.map((i) => i.data)],
  };
}

/**
 * The real-time feed: one row per change others may watch live, written in the
 * transaction of the change, so an item exists if and only if the change committed.
 *
 * Readers follow it by id (`id > cursor`, the SSE route's `Last-Event-ID`), so within an
 * organization the ids must be handed out in commit order: a sequence alone gives them in insert
 * order, and an item whose transaction commits after one with a higher id was read is passed by
 * for good (the SSE route lost items under load). So the items are inserted as the transaction's
 * last work (`Tx.atCommit`), under a transaction lock per organization taken in the same statement:
 * the next transaction of that organization gets its ids only after this one is visible. The lock
 * is held through the insert and the commit, and the holder takes no other lock after it, so it
 * cannot deadlock; organizations do not wait on each other.
 */
@Injectable()
export class StreamRepository {
  private readonly pending = CommitBatch.atCommit<PendingItem>(insertStatement);

  /**
   * Appends a feed item in the caller's transaction. The items of one transaction are inserted
   * together, in the order appended, as it commits (`CommitBatch`, at commit): a consumer batch of
   * status changes writes one statement, and an item still exists if and only if its change
   * committed. `data` is taken as it is now (later changes to the object are not seen).
   */
  async append(tx: Tx, organizationId: string, type: string, data: object): Promise<void> {
    this.pending.add(tx, { organization_id: organizationId, type, data: JSON.stringify(data) });
  }

  /**
   * Items of an organization after `afterId`, oldest first, filtered by type (exact or prefix ending
   * in '.'). Sorted by the column, not by the `id` the query answers: that is text, and "10" sorts
   * before "9" (a page then ended on a lower id than it held, and the next page repeated items).
   */
  async readAfter(tx: Tx, organizationId: string, afterId: string, types: string[], limit: number): Promise<MessagingStreamItem[]> {
    const exact = types.filter((t) => !t.endsWith('.'));
    const prefixes = types.filter((t) => t.endsWith('.')).map((t) => `${t.replace(/[%_\\]/g, '\\$&')}%`);
    const rows = await tx.query<{ id: string; type: string; occurred_at: Date; data: Record<string, unknown> }>(
      `SELECT id::text AS id, type, occurred_at, data FROM stream_events
        WHERE organization_id = $1 AND id > $2::bigint
          AND (cardinality($3::text[]) + cardinality($4::text[]) = 0 OR type = ANY($3::text[]) OR type LIKE ANY($4::text[]))
        ORDER BY stream_events.id LIMIT $5`,
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
