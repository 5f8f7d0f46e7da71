import { Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';
import { genericPlan } from '@touchpoint/database';
import { type EntryRow, ms } from './outbox.repository.js';
import { rowsOf } from '@touchpoint/database';
import { recipientLockKeys } from '../suppressions/recipient-lock.js';

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
  /**
   * Whether the claim's transaction holds the head's recipient lock shared (`recipientLockKeys`),
   * taken without waiting by the claim statement; false while a suppression of that recipient is
   * being written. Null without a head.
   */
  recipientHeld: boolean | null;
}

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
 * The pair lease (a pair is one sender and pacing key, sent in FIFO order): the claim of one due pair and its
 * FIFO head, the lock every writer of a pair takes first, the pacing gate, the release, and the
 * lease recovery's statements on pairs. Times come from the injected clock (`now` parameters).
 */
@Injectable()
export class PairLeaseRepository {
  /**
   * Claims up to `limit` due pairs and moves each one's FIFO head to `sending`, in one statement.
   * - `FOR UPDATE SKIP LOCKED`: two dispatchers never wait on each other; the loser takes the
   *   next due pairs or finds none.
   * - The lease is a compare-and-set (free or expired → ours, fence + 1): a dispatcher that lost its
   *   lease can no longer write, because every later write names the fence.
   * - `last_attempt_started_at + interval <= now` is re-checked here although `next_due_at` already
   *   includes it: pacing must not depend on a denormalised column being right.
   * - A head is taken only when due; otherwise its claim has `entry: null` and the caller releases
   *   the pair, which recomputes `next_due_at`.
   * - Each head's recipient lock is taken shared, without waiting (`recipientHeld`): the pre-wire
   *   gate of the same transaction (`AttemptsRepository.openAttempts`, a later statement) then
   *   reads the do-not-contact list after the lock, as an add's ordering needs.
   * Served by `message_outbox_pairs_due_idx` (candidates) and `message_outbox_pair_fifo_idx` (heads).
   * @returns the claims, in due order (empty when nothing is claimable)
   */
  async claimPairs(tx: Tx, now: Date, owner: string, leaseMs: number, intervalMs: number, limit: number): Promise<Claim[]> {
    const rows = await rowsOf<{ lease_id: string; lease_fence: string; recipient_held: boolean | null } & Partial<EntryRow>>(
      tx,
      `WITH candidate AS (
         SELECT id, next_due_at FROM message_outbox_pairs
          WHERE next_due_at <= $1
            AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
            AND (last_attempt_started_at IS NULL OR last_attempt_started_at + $4::interval <= $1)
          ORDER BY next_due_at
          LIMIT $5
          FOR UPDATE SKIP LOCKED
       ), leased AS (
         UPDATE message_outbox_pairs p
            SET lease_owner = $2, lease_fence = p.lease_fence + 1, lease_expires_at = $1 + $3::interval
           FROM candidate
          WHERE p.id = candidate.id AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= $1)
          RETURNING p.id, p.lease_fence, candidate.next_due_at
       ), head AS (
         SELECT h.id, leased.lease_fence FROM leased
          CROSS JOIN LATERAL (
            SELECT e.id FROM message_outbox e
             WHERE e.pair_id = leased.id AND e.status IN ('pending', 'sending')
             ORDER BY e.seq
             LIMIT 1) h
       ), taken AS (
         UPDATE message_outbox e
            SET status = 'sending', claim_fence = head.lease_fence, claimed_at = $1, updated_at = $1
           FROM head
          WHERE e.id = head.id AND e.status = 'pending' AND e.next_attempt_at <= $1
          RETURNING e.*
       )
       SELECT leased.id AS lease_id, leased.lease_fence,
              CASE WHEN taken.id IS NOT NULL THEN pg_try_advisory_xact_lock_shared(${recipientLockKeys('taken.organization_id', 'taken.channel', 'taken.pacing_key')}) END AS recipient_held,
              taken.*
         FROM leased LEFT JOIN taken ON taken.pair_id = leased.id
        ORDER BY leased.next_due_at, leased.id`,
      [now, owner, ms(leaseMs), ms(intervalMs), limit],
    );
    return rows.map(({ recipient_held, ...row }) => ({ lease: { pairId: String(row.lease_id), fence: String(row.lease_fence), owner }, entry: row.id ? (row as unknown as EntryRow) : null, recipientHeld: recipient_held ?? null }));
  }

  /** Claims ONE due pair and its FIFO head (`claimPairs` with a limit of 1); null when none is claimable. */
  async claimPair(tx: Tx, now: Date, owner: string, leaseMs: number, intervalMs: number): Promise<Claim | null> {
    const [claim] = await this.claimPairs(tx, now, owner, leaseMs, intervalMs, 1);
    return claim ?? null;
  }

  /**
   * Earliest `next_due_at` among pairs that hold pending work and are not leased by a live
   * dispatcher (the claim's `has_more` + `next_due_at`), or null when nothing is pending.
   */
  async nextDue(tx: Tx, now: Date): Promise<Date | null> {
    const [row] = await rowsOf<{ at: Date | null }>(
      tx,
      `SELECT min(next_due_at) AS at FROM message_outbox_pairs
        WHERE next_due_at IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at <= $1)`,
      [now],
    );
    return row?.at ?? null;
  }

  /** Locks the pair row (taken first by every writer of the pair: enqueue, release, recovery). */
  async lockPair(tx: Tx, pairId: string): Promise<{ lease_owner: string | null; lease_fence: string; lease_expires_at: Date | null } | undefined> {
    const [row] = await rowsOf<{ lease_owner: string | null; lease_fence: string; lease_expires_at: Date | null }>(tx, `SELECT lease_owner, lease_fence, lease_expires_at FROM message_outbox_pairs WHERE id = $1 FOR UPDATE`, [pairId]);
    return row;
  }

  /**
   * Locks several pair rows, in id order so two writers locking overlapping sets cannot deadlock
   * (the batched settle of `DispatchService`; single writers lock one pair).
   */
  async lockPairs(tx: Tx, pairIds: string[]): Promise<void> {
    await rowsOf(tx, `SELECT id FROM message_outbox_pairs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, [pairIds]);
  }

  /**
   * The pre-wire gate (seed 004 `start_message_outbox_attempt`): re-validates the lease and the
   * pacing interval and stamps the attempt start on the pair. Null when the lease is lost (or the
   * interval would be broken): the caller must not send.
   */
  async stampPacingGate(tx: Tx, lease: PairLease, now: Date, intervalMs: number): Promise<boolean> {
    const rows = await rowsOf(
      tx,
      `UPDATE message_outbox_pairs SET last_attempt_started_at = $4
        WHERE id = $1 AND lease_owner = $2 AND lease_fence = $3 AND lease_expires_at > $4
          AND (last_attempt_started_at IS NULL OR last_attempt_started_at + $5::interval <= $4)
        RETURNING id`,
      [lease.pairId, lease.owner, lease.fence, now, ms(intervalMs)],
    );
    return rows.length === 1;
  }

  /**
   * Moves each pair's pacing stamp (`last_attempt_started_at`) up to when its attempt's request
   * was actually handed to the provider (`DispatchService.sendOpened`) plus `marginMs`
   * (`PAIR_WIRE_MARGIN_MS`); a stamp already later stays. Run in the settle before the release,
   * which computes the next due time from the stamp. Not fenced by the lease: a later stamp only
   * ever makes the pair wait longer, so it is right even when the lease was recovered meanwhile.
   * The caller has locked the pairs.
   */
  async stampWireStarts(tx: Tx, starts: { pairId: string; at: Date }[], marginMs: number): Promise<void> {
    if (starts.length === 0) return;
    await rowsOf(
      tx,
      genericPlan(`UPDATE message_outbox_pairs p
          SET last_attempt_started_at = GREATEST(p.last_attempt_started_at, w.at + $3::interval)
         FROM (SELECT id, max(at) AS at FROM unnest($1::bigint[], $2::timestamptz[]) AS s(id, at) GROUP BY id) w
        WHERE p.id = w.id`),
      [starts.map((s) => s.pairId), starts.map((s) => s.at), ms(marginMs)],
    );
  }

  /**
   * Ends our lease and recomputes when the pair is next due: its FIFO head's retry time, but not
   * before the pacing interval since the last attempt start. NULL when nothing is pending. The
   * caller has locked the pair in an earlier statement of this transaction, so this statement's
   * snapshot includes every entry committed before the lock (see `OutboxRepository.upsertPairForEnqueue`).
   * @returns the pair's new due time (null: nothing pending, or the lease was not ours any more)
   */
  async releasePair(tx: Tx, lease: PairLease, intervalMs: number): Promise<Date | null> {
    return (await this.releasePairs(tx, [lease], intervalMs))[0] ?? null;
  }

  /**
   * `releasePair` for several leases of one owner in one statement (the pairs are locked already).
   * @returns the new due times of the released pairs that have one
   */
  async releasePairs(tx: Tx, leases: PairLease[], intervalMs: number): Promise<Date[]> {
    if (leases.length === 0) return [];
    const owners = new Set(leases.map((l) => l.owner));
    if (owners.size !== 1) throw new Error('releasePairs: leases of one owner only');
    const rows = await rowsOf<{ next_due_at: Date | null }>(
      tx,
      `UPDATE message_outbox_pairs p
          SET lease_owner = NULL, lease_expires_at = NULL,
              next_due_at = ${headDueSql('$4')}
         FROM unnest($1::bigint[], $3::bigint[]) AS mine(id, fence)
        WHERE p.id = mine.id AND p.lease_owner = $2 AND p.lease_fence = mine.fence
        RETURNING p.next_due_at`,
      [leases.map((l) => l.pairId), leases[0].owner, leases.map((l) => l.fence), ms(intervalMs)],
    );
    return rows.flatMap((r) => (r.next_due_at ? [r.next_due_at] : []));
  }

  /** Recomputes `next_due_at` of a pair nobody holds (after recovery, cancel or repair). */
  async recomputeFreePair(tx: Tx, pairId: string, now: Date, intervalMs: number): Promise<void> {
    await rowsOf(
      tx,
      `UPDATE message_outbox_pairs p
          SET lease_owner = NULL, lease_expires_at = NULL,
              next_due_at = ${headDueSql('$3')}
        WHERE p.id = $1 AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= $2)`,
      [pairId, now, ms(intervalMs)],
    );
  }

  /** Whether the pair's lease under this fence is over (expired, released or superseded). */
  async leaseIsOver(tx: Tx, pairId: string, fence: string, now: Date): Promise<boolean> {
    const [row] = await rowsOf<{ over: boolean }>(tx, `SELECT (lease_expires_at IS NULL OR lease_expires_at <= $2 OR lease_fence <> $3) AS over FROM message_outbox_pairs WHERE id = $1`, [pairId, now, fence]);
    return Boolean(row?.over);
  }

  /** Pairs whose lease ran out with nothing left sending: free them and recompute their due time. */
  async freeExpiredPairs(tx: Tx, now: Date, intervalMs: number): Promise<number> {
    const rows = await rowsOf(
      tx,
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
    const rows = await rowsOf(
      tx,
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
}
