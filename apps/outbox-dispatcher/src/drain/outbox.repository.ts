import { Injectable } from '@nestjs/common';
import type { OutboxChannel, OutboxClassification, OutboxEntryStatus, OutboxPayload, OutboxPayloadType } from '@touchpoint/contracts';
import { cursorAtSql, rowsOf, type Tx } from '@touchpoint/database';
import { codePointLength, toWellFormedText, truncateText } from '@touchpoint/text';

/** A `message_outbox` row. */
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

/** A leased pair. */
export interface PairLease {
  pairId: string;
  fence: string;
  owner: string;
}

/** Result of a claim: the leased pair and its FIFO head, now `sending` (null when the head is not due). */
export interface Claim {
  lease: PairLease;
  entry: EntryRow | null;
}

/** What is written when an attempt ends. */
export interface AttemptEnd {
  outcome: 'accepted' | 'retry' | 'failed' | 'ambiguous' | 'requeued';
  classification: OutboxClassification | null;
  providerCode: string | null;
  httpStatus: number | null;
  retryAfterMs: number | null;
  body: unknown;
}

/** How the entry moves when its attempt ends. */
export interface EntryTransition {
  status: 'pending' | 'accepted' | 'failed' | 'ambiguous';
  nextAttemptAt?: Date;
  providerMessageId?: string | null;
  classification: OutboxClassification | null;
  errorCode: string | null;
  errorMessage: string | null;
  httpStatus: number | null;
  /** Graph's `error_subcode` and `error_data.details`; kept only with an error code. */
  errorSubcode?: string | null;
  errorDetails?: string | null;
}

/** Bodies stored on attempts are cut to this many characters of JSON (triage, not archive). */
const ATTEMPT_BODY_MAX_CHARS = 4000;

const ms = (n: number) => `${Math.round(n)} milliseconds`;

/** Subcode and details of a transition (cut by code points), null without an error code. */
const errorExtras = (t: EntryTransition): [string | null, string | null] =>
  t.errorCode ? [t.errorSubcode ?? null, t.errorDetails ? truncateText(t.errorDetails, 1000) : null] : [null, null];

/**
 * When a pair is next workable: its FIFO head's retry time, but not before the pacing interval
 * since the last attempt start; NULL when nothing is pending, and NULL while the head is a
 * stranded `sending` entry (FIFO: nothing overtakes it until lease recovery settles it and
 * recomputes). `p` is the pair; `interval` the parameter holding the interval.
 */
const headDueSql = (interval: string) => `(
  SELECT CASE WHEN e.status = 'sending' THEN NULL ELSE GREATEST(e.next_attempt_at, p.last_attempt_started_at + ${interval}::interval) END
    FROM message_outbox e
   WHERE e.pair_id = p.id AND e.status IN ('pending', 'sending')
   ORDER BY e.seq LIMIT 1)`;

/**
 * Every SQL statement of the outbox: enqueue, the pair claim and lease, attempts, outcomes,
 * recovery, resolution and pruning. Times come from the injected clock (`now` parameters), never
 * from the database's `now()`, so tests can stand at any instant.
 */
@Injectable()
export class OutboxRepository {
  /**
   * Finds or creates the pair and makes it due when it had nothing pending. The upsert locks the
   * pair row until commit, so a concurrent release (which locks it first, then recomputes the
   * head) either sees this entry or runs before it and leaves `next_due_at` NULL for us to set.
   */
  async upsertPairForEnqueue(tx: Tx, organizationId: string, senderId: string, pacingKey: string, now: Date, intervalMs: number): Promise<string> {
    const [row] = await rowsOf<{ id: string }>(tx, 
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

  /** Inserts an entry unless its key exists; returns the row and whether it was created. */
  async insertEntry(
    tx: Tx,
    entry: Pick<EntryRow, 'id' | 'organization_id' | 'channel' | 'sender_id' | 'pair_id' | 'recipient' | 'pacing_key' | 'idempotency_key' | 'payload_type' | 'payload' | 'max_attempts' | 'log_context' | 'requester'>,
    now: Date,
  ): Promise<{ row: EntryRow; created: boolean }> {
    const [inserted] = await rowsOf<EntryRow>(tx, 
      `INSERT INTO message_outbox (id, organization_id, channel, sender_id, pair_id, recipient, pacing_key, idempotency_key, payload_type, payload,
                                   status, max_attempts, next_attempt_at, log_context, requester, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11, $12, $13, $14, $12, $12)
       ON CONFLICT (organization_id, idempotency_key) DO NOTHING
       RETURNING *`,
      [entry.id, entry.organization_id, entry.channel, entry.sender_id, entry.pair_id, entry.recipient, entry.pacing_key, entry.idempotency_key, entry.payload_type, JSON.stringify(entry.payload), entry.max_attempts, now, JSON.stringify(entry.log_context), entry.requester],
    );
    if (inserted) return { row: inserted, created: true };
    const existing = await this.findByKey(tx, entry.organization_id, entry.idempotency_key);
    if (!existing) throw new Error('idempotency key vanished between insert and read');
    return { row: existing, created: false };
  }

  async findByKey(tx: Tx, organizationId: string, idempotencyKey: string): Promise<EntryRow | undefined> {
    const [row] = await rowsOf<EntryRow>(tx, `SELECT * FROM message_outbox WHERE organization_id = $1 AND idempotency_key = $2`, [organizationId, idempotencyKey]);
    return row;
  }

  /** The entries of several keys of one organization (the unique (organization, key) index serves it). */
  async findByKeys(tx: Tx, organizationId: string, idempotencyKeys: string[]): Promise<EntryRow[]> {
    return rowsOf<EntryRow>(tx, `SELECT * FROM message_outbox WHERE organization_id = $1 AND idempotency_key = ANY($2::text[])`, [organizationId, idempotencyKeys]);
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
   * Claims ONE due pair and moves its FIFO head to `sending`, in one statement.
   * - `FOR UPDATE SKIP LOCKED`: two dispatchers never wait on each other; the loser takes the
   *   next due pair or finds none.
   * - The lease is a compare-and-set (free or expired → ours, fence + 1): a dispatcher that lost its
   *   lease can no longer write, because every later write names the fence.
   * - `last_attempt_started_at + interval <= now` is re-checked here although `next_due_at` already
   *   includes it: pacing must not depend on a denormalised column being right.
   * - The head is taken only when due; otherwise the caller releases the pair, which recomputes
   *   `next_due_at`.
   */
  async claimPair(tx: Tx, now: Date, owner: string, leaseMs: number, intervalMs: number): Promise<Claim | null> {
    const rows = await rowsOf<{ lease_id: string; lease_fence: string } & Partial<EntryRow>>(
      tx,
      `WITH candidate AS (
         SELECT id FROM message_outbox_pairs
          WHERE next_due_at <= $1
            AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
            AND (last_attempt_started_at IS NULL OR last_attempt_started_at + $4::interval <= $1)
          ORDER BY next_due_at
          LIMIT 1
          FOR UPDATE SKIP LOCKED
       ), leased AS (
         UPDATE message_outbox_pairs p
            SET lease_owner = $2, lease_fence = p.lease_fence + 1, lease_expires_at = $1 + $3::interval
           FROM candidate
          WHERE p.id = candidate.id AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= $1)
          RETURNING p.id, p.lease_fence
       ), head AS (
         SELECT e.id FROM message_outbox e, leased
          WHERE e.pair_id = leased.id AND e.status IN ('pending', 'sending')
          ORDER BY e.seq
          LIMIT 1
       ), taken AS (
         UPDATE message_outbox e
            SET status = 'sending', claim_fence = leased.lease_fence, claimed_at = $1, updated_at = $1
           FROM head, leased
          WHERE e.id = head.id AND e.status = 'pending' AND e.next_attempt_at <= $1
          RETURNING e.*
       )
       SELECT leased.id AS lease_id, leased.lease_fence, taken.* FROM leased LEFT JOIN taken ON true`,
      [now, owner, ms(leaseMs), ms(intervalMs)],
    );
    const row = rows[0];
    if (!row) return null;
    const lease: PairLease = { pairId: String(row.lease_id), fence: String(row.lease_fence), owner };
    return { lease, entry: row.id ? (row as EntryRow) : null };
  }

  /**
   * Earliest `next_due_at` among pairs that hold pending work and are not leased by a live
   * dispatcher (the claim's `has_more` + `next_due_at`), or null when nothing is pending.
   */
  async nextDue(tx: Tx, now: Date): Promise<Date | null> {
    const [row] = await rowsOf<{ at: Date | null }>(tx, 
      `SELECT min(next_due_at) AS at FROM message_outbox_pairs
        WHERE next_due_at IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at <= $1)`,
      [now],
    );
    return row?.at ?? null;
  }

  /** Locks the pair row (taken first by every writer of the pair: enqueue, release, recovery). */
  async lockPair(tx: Tx, pairId: string): Promise<{ lease_owner: string | null; lease_fence: string; lease_expires_at: Date | null } | undefined> {
    const [row] = await rowsOf<{ lease_owner: string | null; lease_fence: string; lease_expires_at: Date | null }>(tx, 
      `SELECT lease_owner, lease_fence, lease_expires_at FROM message_outbox_pairs WHERE id = $1 FOR UPDATE`,
      [pairId],
    );
    return row;
  }

  /**
   * The pre-wire gate (seed 004 `start_message_outbox_attempt`): re-validates the lease and the
   * pacing interval and stamps the attempt start on the pair. Null when the lease is lost (or the
   * interval would be broken): the caller must not send.
   */
  async stampPacingGate(tx: Tx, lease: PairLease, now: Date, intervalMs: number): Promise<boolean> {
    const rows = await rowsOf(tx, 
      `UPDATE message_outbox_pairs SET last_attempt_started_at = $4
        WHERE id = $1 AND lease_owner = $2 AND lease_fence = $3 AND lease_expires_at > $4
          AND (last_attempt_started_at IS NULL OR last_attempt_started_at + $5::interval <= $4)
        RETURNING id`,
      [lease.pairId, lease.owner, lease.fence, now, ms(intervalMs)],
    );
    return rows.length === 1;
  }

  /**
   * Opens an attempt in ONE statement — the final pre-wire gate (seed 004
   * `start_message_outbox_attempt`): the recipient must not be suppressed, the lease must still be
   * ours and the pacing interval kept (then the attempt start is stamped on the pair), the entry
   * must still be ours; only then are the attempt counted and its row inserted as `open`.
   * `suppressed` → nothing was stamped; `attemptId` null otherwise → the claim is lost.
   */
  async openAttempt(
    tx: Tx,
    a: { lease: PairLease; entryId: string; organizationId: string; channel: string; pacingKey: string; now: Date; intervalMs: number; prepared: Record<string, unknown> | null },
  ): Promise<{ suppressed: boolean; attemptId: string | null; attempts: number | null }> {
    const [row] = await rowsOf<{ suppressed: boolean; attempt_id: string | null; attempts: number | null }>(
      tx,
      `WITH suppressed AS (
         SELECT 1 FROM contact_suppressions WHERE organization_id = $6 AND channel = $7 AND value = $8
       ), gate AS (
         UPDATE message_outbox_pairs SET last_attempt_started_at = $4
          WHERE id = $1 AND lease_owner = $2 AND lease_fence = $3 AND lease_expires_at > $4
            AND (last_attempt_started_at IS NULL OR last_attempt_started_at + $5::interval <= $4)
            AND NOT EXISTS (SELECT 1 FROM suppressed)
          RETURNING id
       ), bumped AS (
         UPDATE message_outbox SET attempts = attempts + 1, updated_at = $4, prepared = COALESCE($10::jsonb, prepared)
          WHERE id = $9 AND status = 'sending' AND claim_fence = $3 AND EXISTS (SELECT 1 FROM gate)
          RETURNING attempts
       ), attempt AS (
         INSERT INTO message_outbox_attempts (entry_id, pair_id, fence, dispatcher, attempt_number, started_at, outcome)
         SELECT $9, $1, $3, $2, bumped.attempts, $4, 'open' FROM bumped
         RETURNING id, attempt_number
       )
       SELECT EXISTS (SELECT 1 FROM suppressed) AS suppressed, (SELECT id FROM attempt) AS attempt_id, (SELECT attempt_number FROM attempt) AS attempts`,
      [a.lease.pairId, a.lease.owner, a.lease.fence, a.now, ms(a.intervalMs), a.organizationId, a.channel, a.pacingKey, a.entryId, a.prepared === null ? null : JSON.stringify(a.prepared)],
    );
    return { suppressed: row.suppressed, attemptId: row.attempt_id === null ? null : String(row.attempt_id), attempts: row.attempts };
  }

  /** Counts the attempt on the entry (still ours) and saves derived preparation output. Null when the entry is no longer ours. */
  async bumpAttempt(tx: Tx, entryId: string, fence: string, now: Date, prepared: Record<string, unknown> | null): Promise<number | null> {
    const [row] = await rowsOf<{ attempts: number }>(tx, 
      `UPDATE message_outbox SET attempts = attempts + 1, updated_at = $3, prepared = COALESCE($4::jsonb, prepared)
        WHERE id = $1 AND status = 'sending' AND claim_fence = $2 RETURNING attempts`,
      [entryId, fence, now, prepared === null ? null : JSON.stringify(prepared)],
    );
    return row ? row.attempts : null;
  }

  /** Opens (or, for a preparation failure, opens and closes at once) an attempt row. */
  async insertAttempt(tx: Tx, entryId: string, lease: PairLease, attemptNumber: number, now: Date, end?: AttemptEnd): Promise<string> {
    const [row] = await rowsOf<{ id: string }>(tx, 
      `INSERT INTO message_outbox_attempts (entry_id, pair_id, fence, dispatcher, attempt_number, started_at, ended_at, outcome, classification, provider_code, http_status, retry_after_ms, body)
       VALUES ($1, $2, $3, $13, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
      [entryId, lease.pairId, lease.fence, attemptNumber, now, end ? now : null, end?.outcome ?? 'open', end?.classification ?? null, end?.providerCode ?? null, end?.httpStatus ?? null, end?.retryAfterMs ?? null, end ? trimBody(end.body) : null, lease.owner],
    );
    return String(row.id);
  }

  /** Closes an open attempt. False when it was already closed (lease recovery got there first). */
  async closeAttempt(tx: Tx, attemptId: string, end: AttemptEnd, now: Date): Promise<boolean> {
    const rows = await rowsOf(tx, 
      `UPDATE message_outbox_attempts SET ended_at = $2, outcome = $3, classification = $4, provider_code = $5, http_status = $6, retry_after_ms = $7, body = $8
        WHERE id = $1 AND outcome = 'open' RETURNING id`,
      [attemptId, now, end.outcome, end.classification, end.providerCode, end.httpStatus, end.retryAfterMs, trimBody(end.body)],
    );
    return rows.length === 1;
  }

  /**
   * Moves an entry this dispatcher holds (status `sending`, our fence) to its next state. Returns
   * the row, or undefined when the entry is no longer ours (recovered while we were on the wire).
   */
  async transitionClaimed(tx: Tx, entryId: string, fence: string, t: EntryTransition, now: Date): Promise<EntryRow | undefined> {
    const terminal = t.status !== 'pending';
    const [row] = await rowsOf<EntryRow>(tx, 
      `UPDATE message_outbox
          SET status = $3,
              next_attempt_at = COALESCE($4, next_attempt_at),
              provider_message_id = COALESCE($5, provider_message_id),
              last_classification = $6, last_error_code = $7, last_error_message = $8, last_http_status = $9,
              last_error_subcode = $12, last_error_details = $13,
              claim_fence = CASE WHEN $3 = 'pending' THEN NULL ELSE claim_fence END,
              settled_at = CASE WHEN $10 THEN $11::timestamptz ELSE NULL END,
              updated_at = $11
        WHERE id = $1 AND status = 'sending' AND claim_fence = $2
        RETURNING *`,
      [entryId, fence, t.status, t.nextAttemptAt ?? null, t.providerMessageId ?? null, t.classification, t.errorCode, t.errorMessage ? truncateText(t.errorMessage, 1000) : null, t.httpStatus, terminal && t.status !== 'ambiguous', now, ...errorExtras(t)],
    );
    return row;
  }

  /**
   * Closes our attempt and moves our entry in one statement (`closeAttempt` + `transitionClaimed`).
   * Undefined when the entry is no longer ours (recovered while we were on the wire); the attempt
   * is then left as recovery closed it.
   */
  async settleAttempt(tx: Tx, attemptId: string, end: AttemptEnd, entryId: string, fence: string, t: EntryTransition, now: Date): Promise<EntryRow | undefined> {
    const terminal = t.status !== 'pending';
    const [row] = await rowsOf<EntryRow>(
      tx,
      `WITH entry AS (
         UPDATE message_outbox
            SET status = $3,
                next_attempt_at = COALESCE($4, next_attempt_at),
                provider_message_id = COALESCE($5, provider_message_id),
                last_classification = $6, last_error_code = $7, last_error_message = $8, last_http_status = $9,
                last_error_subcode = $19, last_error_details = $20,
                claim_fence = CASE WHEN $3 = 'pending' THEN NULL ELSE claim_fence END,
                settled_at = CASE WHEN $10 THEN $11::timestamptz ELSE NULL END,
                updated_at = $11
          WHERE id = $1 AND status = 'sending' AND claim_fence = $2
          RETURNING *
       ), attempt AS (
         UPDATE message_outbox_attempts
            SET ended_at = $11, outcome = $13, classification = $14, provider_code = $15, http_status = $16, retry_after_ms = $17, body = $18
          WHERE id = $12 AND outcome = 'open' AND EXISTS (SELECT 1 FROM entry)
          RETURNING id
       )
       SELECT entry.* FROM entry LEFT JOIN attempt ON true`,
      [
        entryId, fence, t.status, t.nextAttemptAt ?? null, t.providerMessageId ?? null, t.classification, t.errorCode, t.errorMessage ? truncateText(t.errorMessage, 1000) : null, t.httpStatus,
        terminal && t.status !== 'ambiguous', now,
        attemptId, end.outcome, end.classification, end.providerCode, end.httpStatus, end.retryAfterMs, trimBody(end.body),
        ...errorExtras(t),
      ],
    );
    return row;
  }

  /** Puts a claimed entry back to pending without an attempt (lease lost before the gate, sender unreadable). */
  async requeueUnopened(tx: Tx, entryId: string, fence: string, now: Date, at: Date): Promise<boolean> {
    const rows = await rowsOf(tx, 
      `UPDATE message_outbox SET status = 'pending', claim_fence = NULL, next_attempt_at = $4, updated_at = $3
        WHERE id = $1 AND status = 'sending' AND claim_fence = $2 RETURNING id`,
      [entryId, fence, now, at],
    );
    return rows.length === 1;
  }

  /**
   * Ends our lease and recomputes when the pair is next due: its FIFO head's retry time, but not
   * before the pacing interval since the last attempt start. NULL when nothing is pending. The
   * caller has locked the pair in an earlier statement of this transaction, so this statement's
   * snapshot includes every entry committed before the lock (see `upsertPairForEnqueue`).
   */
  async releasePair(tx: Tx, lease: PairLease, intervalMs: number): Promise<void> {
    await rowsOf(tx, 
      `UPDATE message_outbox_pairs p
          SET lease_owner = NULL, lease_expires_at = NULL,
              next_due_at = ${headDueSql('$4')}
        WHERE p.id = $1 AND p.lease_owner = $2 AND p.lease_fence = $3`,
      [lease.pairId, lease.owner, lease.fence, ms(intervalMs)],
    );
  }

  /** Recomputes `next_due_at` of a pair nobody holds (after recovery, cancel or repair). */
  async recomputeFreePair(tx: Tx, pairId: string, now: Date, intervalMs: number): Promise<void> {
    await rowsOf(tx, 
      `UPDATE message_outbox_pairs p
          SET lease_owner = NULL, lease_expires_at = NULL,
              next_due_at = ${headDueSql('$3')}
        WHERE p.id = $1 AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= $2)`,
      [pairId, now, ms(intervalMs)],
    );
  }

  /** Cancels a pending entry by key (not once claimed). */
  /**
   * Serialises enqueue and cancel of one key until the transaction ends, so a cancel that overtakes
   * its enqueue is either seen by it or sees the entry (never neither).
   */
  async lockKey(tx: Tx, organizationId: string, idempotencyKey: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, [organizationId, idempotencyKey]);
  }

  /** Remembers a cancel whose entry does not exist yet (idempotent). */
  async recordCancellation(tx: Tx, organizationId: string, idempotencyKey: string, now: Date): Promise<void> {
    await tx.query(
      `INSERT INTO message_outbox_cancellations (organization_id, idempotency_key, cancelled_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [organizationId, idempotencyKey, now],
    );
  }

  /** Whether a cancel for this key arrived before the entry. */
  async isCancelledInAdvance(tx: Tx, organizationId: string, idempotencyKey: string): Promise<boolean> {
    const rows = await rowsOf<{ one: number }>(tx, `SELECT 1 AS one FROM message_outbox_cancellations WHERE organization_id = $1 AND idempotency_key = $2`, [organizationId, idempotencyKey]);
    return rows.length > 0;
  }

  async cancelPending(tx: Tx, organizationId: string, idempotencyKey: string, now: Date): Promise<EntryRow | undefined> {
    const [row] = await rowsOf<EntryRow>(tx, 
      `UPDATE message_outbox SET status = 'cancelled', settled_at = $3, updated_at = $3
        WHERE organization_id = $1 AND idempotency_key = $2 AND status = 'pending' RETURNING *`,
      [organizationId, idempotencyKey, now],
    );
    return row;
  }

  // --- lease recovery --------------------------------------------------------------------------

  /** Entries left `sending` by a dispatcher whose lease expired or was superseded. */
  async findStranded(tx: Tx, now: Date, limit: number): Promise<{ id: string; pair_id: string; claim_fence: string }[]> {
    return rowsOf(tx, 
      `SELECT e.id, e.pair_id, e.claim_fence FROM message_outbox e JOIN message_outbox_pairs p ON p.id = e.pair_id
        WHERE e.status = 'sending'
          AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= $1 OR p.lease_fence <> e.claim_fence)
        ORDER BY e.seq LIMIT $2`,
      [now, limit],
    );
  }

  /** Whether the pair's lease under this fence is over (expired, released or superseded). */
  async leaseIsOver(tx: Tx, pairId: string, fence: string, now: Date): Promise<boolean> {
    const [row] = await rowsOf<{ over: boolean }>(tx, 
      `SELECT (lease_expires_at IS NULL OR lease_expires_at <= $2 OR lease_fence <> $3) AS over FROM message_outbox_pairs WHERE id = $1`,
      [pairId, now, fence],
    );
    return Boolean(row?.over);
  }

  async findOpenAttempt(tx: Tx, entryId: string): Promise<{ id: string; attempt_number: number } | undefined> {
    const [row] = await rowsOf<{ id: string; attempt_number: number }>(tx, 
      `SELECT id, attempt_number FROM message_outbox_attempts WHERE entry_id = $1 AND outcome = 'open' ORDER BY id DESC LIMIT 1`,
      [entryId],
    );
    return row;
  }

  /** Pairs whose lease ran out with nothing left sending: free them and recompute their due time. */
  async freeExpiredPairs(tx: Tx, now: Date, intervalMs: number): Promise<number> {
    const rows = await rowsOf(tx, 
      `UPDATE message_outbox_pairs p
          SET lease_owner = NULL, lease_expires_at = NULL,
              next_due_at = ${headDueSql('$2')}
        WHERE p.lease_expires_at <= $1
          AND NOT EXISTS (SELECT 1 FROM message_outbox s WHERE s.pair_id = p.id AND s.status = 'sending')
        RETURNING p.id`,
      [now, ms(intervalMs)],
    );
    return rows.length;
  }

  /** Backstop: pairs with pending work but no due time (should not happen) get one. */
  async repairUndatedPairs(tx: Tx, now: Date, intervalMs: number): Promise<number> {
    const rows = await rowsOf(tx, 
      `UPDATE message_outbox_pairs p
          SET next_due_at = GREATEST($1, p.last_attempt_started_at + $2::interval)
        WHERE p.next_due_at IS NULL AND p.lease_expires_at IS NULL
          AND EXISTS (SELECT 1 FROM message_outbox e WHERE e.pair_id = p.id AND e.status = 'pending')
          AND NOT EXISTS (SELECT 1 FROM message_outbox s WHERE s.pair_id = p.id AND s.status = 'sending')
        RETURNING p.id`,
      [now, ms(intervalMs)],
    );
    return rows.length;
  }

  // --- resolution ------------------------------------------------------------------------------

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
    const [row] = await rowsOf<EntryRow>(tx, 
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
  async insertProviderStatus(
    tx: Tx,
    s: { channel: string; accountId: string; providerMessageId: string; status: string; providerTimestamp: Date; recipient: string | null; correlation: string | null; body: unknown },
    now: Date,
  ): Promise<string | null> {
    const [row] = await rowsOf<{ id: string }>(tx, 
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

  // --- sweep probes and pruning ----------------------------------------------------------------

  /** Age of the oldest due pending entry (ms) and how many are due; for the age warning and gauge. */
  async dueProbe(tx: Tx, now: Date): Promise<{ due: number; oldestDueAt: Date | null; ambiguous: number }> {
    const [row] = await rowsOf<{ due: number; oldest: Date | null; ambiguous: number }>(tx, 
      `SELECT (SELECT count(*)::int FROM message_outbox WHERE status = 'pending' AND next_attempt_at <= $1) AS due,
              (SELECT min(next_attempt_at) FROM message_outbox WHERE status = 'pending' AND next_attempt_at <= $1) AS oldest,
              (SELECT count(*)::int FROM message_outbox WHERE status = 'ambiguous') AS ambiguous`,
      [now],
    );
    return { due: row.due, oldestDueAt: row.oldest, ambiguous: row.ambiguous };
  }

  /**
   * Deletes settled entries past retention (accepted after `acceptedDays`, failed and cancelled
   * after `failedDays`; ambiguous never), then pairs no entry references and nobody holds.
   */
  async prune(tx: Tx, now: Date, acceptedDays: number, failedDays: number, batch: number): Promise<{ entries: number; pairs: number; statuses: number }> {
    const entries = await rowsOf(tx, 
      `DELETE FROM message_outbox WHERE id IN (
         SELECT id FROM message_outbox
          WHERE (status = 'accepted' AND settled_at < $1::timestamptz - make_interval(days => $2))
             OR (status IN ('failed', 'cancelled') AND settled_at < $1::timestamptz - make_interval(days => $3))
          LIMIT $4) RETURNING id`,
      [now, acceptedDays, failedDays, batch],
    );
    const pairs = await rowsOf(tx, 
      `DELETE FROM message_outbox_pairs p
        WHERE p.lease_owner IS NULL AND p.next_due_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM message_outbox e WHERE e.pair_id = p.id)
          AND p.id IN (SELECT id FROM message_outbox_pairs WHERE lease_owner IS NULL AND next_due_at IS NULL LIMIT $1)
        RETURNING p.id`,
      [batch],
    );
    const statuses = await rowsOf(tx, `DELETE FROM provider_statuses WHERE received_at < $1::timestamptz - make_interval(days => $2) RETURNING id`, [now, failedDays]);
    // A cancel-in-advance outlives any enqueue that could still be in flight by far.
    await tx.query(`DELETE FROM message_outbox_cancellations WHERE cancelled_at < $1::timestamptz - make_interval(days => $2)`, [now, failedDays]);
    return { entries: entries.length, pairs: pairs.length, statuses: statuses.length };
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

function trimBody(body: unknown): string | null {
  if (body === undefined || body === null) return null;
  // jsonb refuses the escape of a lone surrogate, and a provider's answer may hold one.
  const text = JSON.stringify(body, (_key, value: unknown) => (typeof value === 'string' ? toWellFormedText(value) : value));
  return codePointLength(text) <= ATTEMPT_BODY_MAX_CHARS ? text : JSON.stringify({ truncated: truncateText(text, ATTEMPT_BODY_MAX_CHARS) });
}
