import { Injectable } from '@nestjs/common';
import type { OutboxChannel, OutboxClassification, OutboxEntryStatus, OutboxPayload, OutboxPayloadType } from '@touchpoint/contracts';
import { rowsOf, type Tx, genericPlan } from '@touchpoint/database';

/** A `message_outbox` row. */
/** What an enqueue writes of a new entry (the rest starts as the table's defaults: `pending`, no attempt). */
export type NewEntry = Pick<EntryRow, 'id' | 'organization_id' | 'channel' | 'sender_id' | 'pair_id' | 'recipient' | 'pacing_key' | 'idempotency_key' | 'payload_type' | 'payload' | 'max_attempts' | 'log_context' | 'requester'> & { stop_on_reply?: boolean };

export interface EntryRow {
  id: string;
  seq: string;
  organization_id: string;
  channel: OutboxChannel;
  sender_id: string;
  pair_id: string;
  recipient: string;
  pacing_key: string;
  idempotency_key: string;
  payload_type: OutboxPayloadType;
  payload: OutboxPayload;
  prepared: Record<string, unknown> | null;
  status: OutboxEntryStatus;
  attempts: number;
  max_attempts: number;
  next_attempt_at: Date;
  claim_fence: string | null;
  claimed_at: Date | null;
  log_context: Record<string, string | number>;
  requester: string | null;
  /** A reply of the recipient stops it: held after one (`ReplyHoldRepository`). */
  stop_on_reply?: boolean;
  provider_message_id: string | null;
  evidence: Evidence | null;
  last_classification: OutboxClassification | null;
  last_error_code: string | null;
  last_error_message: string | null;
  last_http_status: number | null;
  last_error_subcode?: string | null;
  last_error_details?: string | null;
  resolution: string | null;
  resolution_note: string | null;
  resolved_by: string | null;
  created_at: Date;
  updated_at: Date;
  settled_at: Date | null;
}

/** A provider correlation stored on a row that was still sending (seed 004 `evidence_recorded`). */
export interface Evidence {
  provider_message_id: string;
  status: string;
  recorded_at: string;
}

/** An idempotency key with its organization (keys are unique per organization). */
export interface OrganizationKey {
  organizationId: string;
  idempotencyKey: string;
}

/** One map key per (organization, idempotency key); PostgreSQL text holds no NUL. */
export const organizationKeyOf = (organizationId: string, idempotencyKey: string): string => `${organizationId}\u0000${idempotencyKey}`;

/** One map key per pair (a sender's id in PostgreSQL's lower-case spelling); every batch sorts pairs by it. */
export const pairKeyOf = (senderId: string, pacingKey: string): string => `${senderId.toLowerCase()}\u0000${pacingKey}`;

/** A duration in ms as a Postgres interval literal (`$n::interval`). */
export const ms = (n: number) => `${Math.round(n)} milliseconds`;

/**
 * The entries of the outbox: enqueue (with its pair), lookups, and cancellation by key. The pair
 * lease is `PairLeaseRepository`, attempts and outcomes `AttemptsRepository`, ambiguous
 * resolution `AmbiguousRepository`, the sweep's probe and pruning `SweepRepository`. Times come
 * from the injected clock (`now` parameters), never from the database's `now()`, so tests can
 * stand at any instant.
 */
@Injectable()
export class OutboxRepository {
  /**
   * Finds or creates the pair and makes it due when it had nothing pending. The upsert locks the
   * pair row until commit, so a concurrent release (which locks it first, then recomputes the
   * head) either sees this entry or runs before it and leaves `next_due_at` NULL for us to set.
   */
  async upsertPairForEnqueue(tx: Tx, organizationId: string, senderId: string, pacingKey: string, now: Date, intervalMs: number): Promise<string> {
    const [row] = await rowsOf<{ id: string }>(
      tx,
      `INSERT INTO message_outbox_pairs (organization_id, sender_id, pacing_key, next_due_at, created_at)
       VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (sender_id, pacing_key) DO UPDATE
         SET next_due_at = COALESCE(message_outbox_pairs.next_due_at,
                                    GREATEST($4, message_outbox_pairs.last_attempt_started_at + $5::interval))
       RETURNING id`,
      [organizationId, senderId, pacingKey, now, ms(intervalMs)],
    );
    return row.id;
  }

  /**
   * `upsertPairForEnqueue` for the pairs of a consumer batch of enqueues, in one statement; answers
   * each pair's id by `pairKeyOf(sender_id, pacing_key)`. The rows go in (sender_id, pacing_key)
   * order without repeats: the upsert locks each pair row until commit, and two batches locking
   * overlapping pairs in different orders would wait for each other (a repeat would also make
   * ON CONFLICT DO UPDATE touch one row twice, which PostgreSQL refuses).
   */
  async upsertPairsForEnqueue(tx: Tx, pairs: { organizationId: string; senderId: string; pacingKey: string }[], now: Date, intervalMs: number): Promise<Map<string, string>> {
    const unique = new Map(pairs.map((p) => [pairKeyOf(p.senderId, p.pacingKey), p]));
    const ids = new Map<string, string>();
    if (unique.size === 0) return ids;
    const sorted = [...unique.keys()].sort().map((key) => unique.get(key)!);
    const rows = await rowsOf<{ id: string; sender_id: string; pacing_key: string }>(
      tx,
      genericPlan(`INSERT INTO message_outbox_pairs (organization_id, sender_id, pacing_key, next_due_at, created_at)
       SELECT o, s, k, $4::timestamptz, $4::timestamptz FROM unnest($1::text[], $2::uuid[], $3::text[]) WITH ORDINALITY AS p (o, s, k, n) ORDER BY n
       ON CONFLICT (sender_id, pacing_key) DO UPDATE
         SET next_due_at = COALESCE(message_outbox_pairs.next_due_at,
                                    GREATEST($4::timestamptz, message_outbox_pairs.last_attempt_started_at + $5::interval))
       RETURNING id, sender_id, pacing_key`),
      [sorted.map((p) => p.organizationId), sorted.map((p) => p.senderId), sorted.map((p) => p.pacingKey), now, ms(intervalMs)],
    );
    for (const row of rows) ids.set(pairKeyOf(row.sender_id, row.pacing_key), row.id);
    return ids;
  }

  /**
   * Inserts an entry unless its key exists; returns the row and whether it was created. An entry
   * that stops on a reply is written due now all the same: a hold covers what is pending when the
   * person writes (`ReplyHoldRepository`), not a send the flow queues after that, which is most
   * often its answer to that very message.
   */
  async insertEntry(tx: Tx, entry: NewEntry, now: Date): Promise<{ row: EntryRow; created: boolean }> {
    const [inserted] = await rowsOf<EntryRow>(
      tx,
      `INSERT INTO message_outbox (id, organization_id, channel, sender_id, pair_id, recipient, pacing_key, idempotency_key, payload_type, payload,
                                   status, max_attempts, next_attempt_at, log_context, requester, stop_on_reply, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11, $12, $13, $14, $15, $12, $12)
       ON CONFLICT (organization_id, idempotency_key) DO NOTHING
       RETURNING *`,
      [
        entry.id,
        entry.organization_id,
        entry.channel,
        entry.sender_id,
        entry.pair_id,
        entry.recipient,
        entry.pacing_key,
        entry.idempotency_key,
        entry.payload_type,
        JSON.stringify(entry.payload),
        entry.max_attempts,
        now,
        JSON.stringify(entry.log_context),
        entry.requester,
        entry.stop_on_reply === true,
      ],
    );
    if (inserted) return { row: inserted, created: true };
    const existing = await this.findByKey(tx, entry.organization_id, entry.idempotency_key);
    if (!existing) throw new Error('idempotency key vanished between insert and read');
    return { row: existing, created: false };
  }

  /**
   * Inserts the entries of a prepared consumer batch in one statement, in the order given (their
   * `seq` follows it, as one insert each would), skipping a key that exists. The caller holds every
   * key's lock (`lockKeys`) and read none of them, so a skip means a key given twice.
   * @returns the rows inserted, in the order given
   */
  async insertEntries(tx: Tx, entries: NewEntry[], now: Date): Promise<EntryRow[]> {
    if (entries.length === 0) return [];
    const column = <K extends keyof NewEntry>(key: K) => entries.map((e) => e[key]);
    return rowsOf<EntryRow>(
      tx,
      genericPlan(`INSERT INTO message_outbox (id, organization_id, channel, sender_id, pair_id, recipient, pacing_key, idempotency_key, payload_type, payload,
                                   status, max_attempts, next_attempt_at, log_context, requester, stop_on_reply, created_at, updated_at)
       SELECT v.id, v.organization_id, v.channel, v.sender_id, v.pair_id, v.recipient, v.pacing_key, v.idempotency_key, v.payload_type, v.payload::jsonb,
              'pending', v.max_attempts, $15, v.log_context::jsonb, v.requester, v.stop_on_reply, $15, $15
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::boolean[])
              WITH ORDINALITY AS v(id, organization_id, channel, sender_id, pair_id, recipient, pacing_key, idempotency_key, payload_type, payload, max_attempts, log_context, requester, stop_on_reply, n)
        ORDER BY v.n
       ON CONFLICT (organization_id, idempotency_key) DO NOTHING
       RETURNING *`),
      [
        column('id'),
        column('organization_id'),
        column('channel'),
        column('sender_id'),
        column('pair_id'),
        column('recipient'),
        column('pacing_key'),
        column('idempotency_key'),
        column('payload_type'),
        entries.map((e) => JSON.stringify(e.payload)),
        column('max_attempts'),
        entries.map((e) => JSON.stringify(e.log_context)),
        column('requester'),
        entries.map((e) => e.stop_on_reply === true),
        now,
      ],
    );
  }

  async findByKey(tx: Tx, organizationId: string, idempotencyKey: string): Promise<EntryRow | undefined> {
    const [row] = await rowsOf<EntryRow>(tx, `SELECT * FROM message_outbox WHERE organization_id = $1 AND idempotency_key = $2`, [organizationId, idempotencyKey]);
    return row;
  }

  /** The entries of several keys of one organization (the unique (organization, key) index serves it). */
  async findByKeys(tx: Tx, organizationId: string, idempotencyKeys: string[]): Promise<EntryRow[]> {
    return rowsOf<EntryRow>(tx, `SELECT * FROM message_outbox WHERE organization_id = $1 AND idempotency_key = ANY($2::text[])`, [organizationId, idempotencyKeys]);
  }

  /** The entries of several (organization, key) pairs, of any organizations (the unique (organization, key) index serves it). */
  async findByOrganizationKeys(tx: Tx, keys: OrganizationKey[]): Promise<EntryRow[]> {
    if (keys.length === 0) return [];
    return rowsOf<EntryRow>(
      tx,
      genericPlan(`SELECT m.* FROM message_outbox m
        WHERE (m.organization_id, m.idempotency_key) IN (SELECT o, k FROM unnest($1::text[], $2::text[]) AS u (o, k))`),
      [keys.map((k) => k.organizationId), keys.map((k) => k.idempotencyKey)],
    );
  }

  async findById(tx: Tx, entryId: string, forUpdate = false): Promise<EntryRow | undefined> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(entryId)) return undefined;
    const [row] = await rowsOf<EntryRow>(tx, `SELECT * FROM message_outbox WHERE id = $1 ${forUpdate ? 'FOR UPDATE' : ''}`, [entryId]);
    return row;
  }

  async findByProviderMessageId(tx: Tx, providerMessageId: string): Promise<EntryRow | undefined> {
    const [row] = await rowsOf<EntryRow>(tx, `SELECT * FROM message_outbox WHERE provider_message_id = $1 LIMIT 1`, [providerMessageId]);
    return row;
  }

  /**
   * Serialises enqueue and cancel of one key until the transaction ends, so a cancel that overtakes
   * its enqueue is either seen by it or sees the entry (never neither).
   */
  async lockKey(tx: Tx, organizationId: string, idempotencyKey: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, [organizationId, idempotencyKey]);
  }

  /**
   * `lockKey` for several keys in one statement. The locks are taken in one order, that of their
   * two hashes, without repeats: two transactions locking overlapping keys in different orders
   * would wait for each other. The ORDER BY sits in a subquery, which PostgreSQL does not flatten
   * into the outer query, so the locks are taken in the order the subquery's rows come out.
   */
  async lockKeys(tx: Tx, keys: OrganizationKey[]): Promise<void> {
    if (keys.length === 0) return;
    await tx.query(
      `SELECT pg_advisory_xact_lock(o, k) FROM (
         SELECT DISTINCT hashtext(u.o) AS o, hashtext(u.k) AS k FROM unnest($1::text[], $2::text[]) AS u (o, k) ORDER BY 1, 2
       ) locks`,
      [keys.map((k) => k.organizationId), keys.map((k) => k.idempotencyKey)],
    );
  }

  /** Remembers a cancel whose entry does not exist yet (idempotent). */
  async recordCancellation(tx: Tx, organizationId: string, idempotencyKey: string, now: Date): Promise<void> {
    await tx.query(`INSERT INTO message_outbox_cancellations (organization_id, idempotency_key, cancelled_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [organizationId, idempotencyKey, now]);
  }

  /** Whether a cancel for this key arrived before the entry. */
  async isCancelledInAdvance(tx: Tx, organizationId: string, idempotencyKey: string): Promise<boolean> {
    const rows = await rowsOf<{ one: number }>(tx, `SELECT 1 AS one FROM message_outbox_cancellations WHERE organization_id = $1 AND idempotency_key = $2`, [organizationId, idempotencyKey]);
    return rows.length > 0;
  }

  /** Which of several keys had their cancel arrive before their entry (`isCancelledInAdvance` for many). */
  async cancelledInAdvance(tx: Tx, keys: OrganizationKey[]): Promise<OrganizationKey[]> {
    if (keys.length === 0) return [];
    const rows = await rowsOf<{ organization_id: string; idempotency_key: string }>(
      tx,
      `SELECT organization_id, idempotency_key FROM message_outbox_cancellations
        WHERE (organization_id, idempotency_key) IN (SELECT o, k FROM unnest($1::text[], $2::text[]) AS u (o, k))`,
      [keys.map((k) => k.organizationId), keys.map((k) => k.idempotencyKey)],
    );
    return rows.map((r) => ({ organizationId: r.organization_id, idempotencyKey: r.idempotency_key }));
  }

  /** Cancels a pending entry by key (not once claimed). */
  async cancelPending(tx: Tx, organizationId: string, idempotencyKey: string, now: Date): Promise<EntryRow | undefined> {
    const [row] = await rowsOf<EntryRow>(
      tx,
      `UPDATE message_outbox SET status = 'cancelled', settled_at = $3, updated_at = $3
        WHERE organization_id = $1 AND idempotency_key = $2 AND status = 'pending' RETURNING *`,
      [organizationId, idempotencyKey, now],
    );
    return row;
  }

  /**
   * Holds every pending entry of a sender until `until`, and its pairs with them, so no dispatcher
   * claims them earlier. Entries being sent now are left alone (their attempt is open).
   */
  async delaySender(tx: Tx, senderId: string, until: Date): Promise<void> {
    await rowsOf(tx, `UPDATE message_outbox SET next_attempt_at = $2 WHERE sender_id = $1 AND status = 'pending' AND next_attempt_at < $2`, [senderId, until]);
    await rowsOf(tx, `UPDATE message_outbox_pairs SET next_due_at = $2 WHERE sender_id = $1 AND next_due_at IS NOT NULL AND next_due_at < $2`, [senderId, until]);
  }
}
