import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { MessagingChannel } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

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

/**
 * The receipts table. Each call is one autocommitted statement: an insert is durable when it
 * returns, and a claim or a release never leaves a receipt half-held.
 */
@Injectable()
export class InboundReceiptsRepository {
  constructor(@Inject(DataSource) private readonly db: DataSource) {}

  /**
   * Inserts the receipts in one statement; a provider id already waiting is skipped.
   * @param db the transaction to write in (acceptance publishes its hold events in it); the pool by default
   * @returns the external ids that were new
   */
  async insert(receipts: NewInboundReceipt[], db: Queryable = this.db): Promise<Set<string>> {
    if (receipts.length === 0) return new Set();
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
    const inserted = await rowsOf<{ external_id: string }>(
      db,
      `INSERT INTO inbound_receipts (organization_id, channel, external_id, sender_id, contact_name, message) VALUES ${rows.join(', ')}
       ON CONFLICT (organization_id, channel, external_id) DO NOTHING RETURNING external_id`,
      params,
    );
    return new Set(inserted.map((r) => r.external_id));
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
