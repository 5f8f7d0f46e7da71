import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { MessagingChannel, OutgoingMessage } from '@touchpoint/contracts';
import { outboxPayload, poolOf, rowsOf } from '@touchpoint/database';

/** One inbound message as the provider sent it, waiting for the worker (table `inbound_receipts`). */
export interface InboundReceiptRow {
  id: string;
  organization_id: string;
  channel: MessagingChannel;
  external_id: string;
  sender_id: string | null;
  contact_name: string | null;
  /** The provider's message object, untouched (Meta: one item of `value.messages`). */
  message: Record<string, unknown>;
  received_at: Date;
  attempts: number;
}

/** What `accept` writes for one message. */
export interface NewInboundReceipt {
  organization_id: string;
  channel: MessagingChannel;
  external_id: string;
  sender_id: string | null;
  contact_name: string | null;
  message: unknown;
}

/** An event to write with a receipt if that receipt is new (`InboundReceiptsRepository.insert`). */
export interface ReceiptEvent {
  /** The receipt it goes with. */
  external_id: string;
  /** Of the events of one group, only the first new receipt's is written. */
  group: string;
  message: OutgoingMessage;
}

/**
 * The receipts table. Each call is one autocommitted statement: an insert is durable when it
 * returns, and a claim or a release never leaves a receipt half-held.
 */
@Injectable()
export class InboundReceiptsRepository {
  constructor(@Inject(DataSource) private readonly db: DataSource) {}

  /**
   * Inserts the receipts and the events that go with the new ones in ONE autocommitted statement
   * (a data-modifying CTE): durable when it returns, the events committed if and only if their
   * receipt was new, and one round trip instead of BEGIN, two inserts and COMMIT on the webhook's
   * acknowledgement path. A provider id already waiting is skipped, and so is its event.
   * @param events candidate events, each naming the receipt (`external_id`) it goes with and a
   *   `group`: of a group, only the event of its first NEW receipt (in `receipts` order) is written
   * @param occurredAt the events' `occurred_at`
   * @returns the external ids that were new, and whether any event row was written (then the caller wakes the relay)
   */
  async insert(receipts: NewInboundReceipt[], events: ReceiptEvent[] = [], occurredAt: Date = new Date()): Promise<{ inserted: Set<string>; published: boolean }> {
    if (receipts.length === 0) return { inserted: new Set(), published: false };
    const params: unknown[] = [];
    const rows = receipts.map((r) => {
      // jsonb refuses the NUL character: it goes, wherever a provider put it.
      params.push(
        r.organization_id,
        r.channel,
        r.external_id,
        r.sender_id,
        r.contact_name?.replaceAll('\u0000', '') ?? null,
        JSON.stringify(r.message, (_key, value: unknown) => (typeof value === 'string' ? value.replaceAll('\u0000', '') : value)),
      );
      const b = params.length - 6;
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}::jsonb)`;
    });
    const at = occurredAt.toISOString();
    const order = new Map(receipts.map((r, i) => [r.external_id, i]));
    const candidates = events.map((e) => ({ ord: order.get(e.external_id), grp: e.group, external_id: e.external_id, event_id: e.message.event_id, type: e.message.type, organization_id: e.message.organization_id, payload: outboxPayload(e.message, at) }));
    params.push(JSON.stringify(candidates));
    const result = await rowsOf<{ external_id: string; published: number }>(
      poolOf(this.db),
      `WITH ins AS (
         INSERT INTO inbound_receipts (organization_id, channel, external_id, sender_id, contact_name, message) VALUES ${rows.join(', ')}
         ON CONFLICT (organization_id, channel, external_id) DO NOTHING RETURNING external_id
       ), ev AS (
         INSERT INTO outbox_events (event_id, type, organization_id, payload)
         SELECT DISTINCT ON (c.grp) c.event_id, c.type, c.organization_id, c.payload::jsonb
           FROM jsonb_to_recordset($${params.length}::jsonb) AS c(ord int, grp text, external_id text, event_id text, type text, organization_id text, payload text)
           JOIN ins ON ins.external_id = c.external_id
          ORDER BY c.grp, c.ord
         ON CONFLICT (event_id) DO NOTHING RETURNING 1
       )
       SELECT external_id, (SELECT count(*)::int FROM ev) AS published FROM ins`,
      params,
    );
    return { inserted: new Set(result.map((r) => r.external_id)), published: (result[0]?.published ?? 0) > 0 };
  }

  /**
   * Claims up to `limit` due receipts, oldest first, for `leaseMs` (SKIP LOCKED: workers of other
   * replicas take other rows; a crashed worker's rows come due again when the lease ends).
   * @returns the claimed rows in arrival order
   */
  async claim(limit: number, leaseMs: number): Promise<InboundReceiptRow[]> {
    const rows = await rowsOf<InboundReceiptRow>(
      this.db,
      `UPDATE inbound_receipts SET due_at = now() + make_interval(secs => $2::float8 / 1000)
        WHERE id IN (SELECT id FROM inbound_receipts WHERE due_at <= now() ORDER BY due_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING id, organization_id, channel, external_id, sender_id, contact_name, message, received_at, attempts`,
      [limit, leaseMs],
    );
    return rows.sort((a, b) => Number(a.id) - Number(b.id));
  }

  /** Deletes processed receipts (their messages, or their denial, are the record now). */
  async remove(ids: string[]): Promise<void> {
    if (ids.length) await this.db.query(`DELETE FROM inbound_receipts WHERE id = ANY($1::bigint[])`, [ids]);
  }

  /**
   * Puts receipts back for a later try, `retryInMs` from now; `failed` ones count an attempt and
   * keep the error (the others only waited behind a failed message of the same sender).
   */
  async retry(ids: string[], retryInMs: number, failed: { id: string; error: string } | null): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(
      `UPDATE inbound_receipts SET due_at = now() + make_interval(secs => $2::float8 / 1000),
              attempts = attempts + CASE WHEN id = $3::bigint THEN 1 ELSE 0 END,
              last_error = CASE WHEN id = $3::bigint THEN $4 ELSE last_error END
        WHERE id = ANY($1::bigint[])`,
      [ids, retryInMs, failed?.id ?? null, failed?.error ?? null],
    );
  }

  /** Receipts waiting and the age of the oldest, seconds (0 when none). */
  async backlog(): Promise<{ waiting: number; oldest_seconds: number }> {
    const [row] = await this.db.query<{ waiting: number; oldest_seconds: number }[]>(`SELECT count(*)::int AS waiting, COALESCE(EXTRACT(EPOCH FROM now() - min(received_at)), 0)::float8 AS oldest_seconds FROM inbound_receipts`);
    return row ?? { waiting: 0, oldest_seconds: 0 };
  }
}
