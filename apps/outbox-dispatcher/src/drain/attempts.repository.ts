import { Injectable } from '@nestjs/common';
import type { OutboxClassification } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { genericPlan } from '@touchpoint/database';
import { codePointLength, toWellFormedText, truncateText } from '@touchpoint/text';
import { type EntryRow, ms } from './outbox.repository.js';
import type { PairLease } from './pair-lease.repository.js';
import { rowsOf } from '@touchpoint/database';
import { recipientLockKeys } from '../suppressions/recipient-lock.js';

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

/** Subcode and details of a transition (cut by code points), null without an error code. */
const errorExtras = (t: EntryTransition): [string | null, string | null] => (t.errorCode ? [t.errorSubcode ?? null, t.errorDetails ? truncateText(t.errorDetails, 1000) : null] : [null, null]);

/**
 * The SET list of an entry's move out of `sending` (`transitionClaimed`, `settleAttempts`), written
 * once. `v` names the value expressions: statement parameters or columns of a batch's rows. The
 * target table is aliased `e`.
 */
const transitionSetSql = (v: { status: string; nextAttemptAt: string; providerMessageId: string; classification: string; errorCode: string; errorMessage: string; httpStatus: string; errorSubcode: string; errorDetails: string; settles: string; now: string }) =>
  `status = ${v.status},
   next_attempt_at = COALESCE(${v.nextAttemptAt}, e.next_attempt_at),
   provider_message_id = COALESCE(${v.providerMessageId}, e.provider_message_id),
   last_classification = ${v.classification}, last_error_code = ${v.errorCode}, last_error_message = ${v.errorMessage}, last_http_status = ${v.httpStatus},
   last_error_subcode = ${v.errorSubcode}, last_error_details = ${v.errorDetails},
   claim_fence = CASE WHEN ${v.status} = 'pending' THEN NULL ELSE e.claim_fence END,
   settled_at = CASE WHEN ${v.settles} THEN ${v.now} ELSE NULL END,
   updated_at = ${v.now}`;

/** The transition's values in `transitionSetSql`'s order of meaning (message, subcode and details cut). */
function transitionValues(t: EntryTransition) {
  const [errorSubcode, errorDetails] = errorExtras(t);
  return {
    status: t.status,
    next_attempt_at: t.nextAttemptAt ?? null,
    provider_message_id: t.providerMessageId ?? null,
    classification: t.classification,
    error_code: t.errorCode,
    error_message: t.errorMessage ? truncateText(t.errorMessage, 1000) : null,
    http_status: t.httpStatus,
    error_subcode: errorSubcode,
    error_details: errorDetails,
    // Ambiguous is not settled: it waits for correlation or a person.
    settles: t.status !== 'pending' && t.status !== 'ambiguous',
  };
}

/** One attempt to open in `openAttempts`. */
export interface AttemptToOpen {
  lease: PairLease;
  entryId: string;
  organizationId: string;
  channel: string;
  pacingKey: string;
  prepared: Record<string, unknown> | null;
}

/** What the pre-wire gate made of one entry (`openAttempts`). */
export interface OpenedAttempt {
  /** Its recipient was being suppressed at that moment: not opened, to be handed back and tried again. */
  busy: boolean;
  /** Its recipient is on the do-not-contact list: not opened. */
  suppressed: boolean;
  /** The attempt opened; null (with neither flag) when the claim was lost. */
  attemptId: string | null;
  attempts: number | null;
}

/** One attempt to close, with its entry's move, in `settleAttempts`. */
export interface AttemptToSettle {
  attemptId: string;
  end: AttemptEnd;
  entryId: string;
  fence: string;
  transition: EntryTransition;
  /** The outcome's instant (`ended_at`, `settled_at`). */
  now: Date;
}

/**
 * The attempts of a claimed entry and how they end: the pre-wire gate that opens one, its close,
 * the entry's move to its next state (`transitionClaimed`, `settleAttempt`), and what lease
 * recovery reads of entries left `sending`. Every write names the claim fence.
 */
@Injectable()
export class AttemptsRepository {
  /**
   * Opens the attempts of several claimed entries in ONE statement — the final pre-wire gate (seed
   * 004 `start_message_outbox_attempt`), per entry: the recipient must not be suppressed, the lease
   * must still be ours and the pacing interval kept (then the attempt start is stamped on the
   * pair), the entry must still be ours; only then is the attempt counted and its row inserted as
   * `open`. All leases must be of one owner; one entry per pair.
   *
   * First, in a statement of its own (unless `recipientsHeld`: an earlier statement of `tx` took
   * them), each entry's recipient lock is taken shared (`recipientLockKeys`) without waiting: an entry whose recipient is being suppressed right now
   * is answered `busy` and not opened (the caller hands it back). The lock is held until `tx`
   * ends, and the gate's read of the list comes in the next statement, so it sees every
   * suppression committed before the lock was taken; an add that comes later waits for this
   * transaction, then for its attempts to leave the wire (`SuppressionsService.addInForce`).
   * @returns per entry id: `busy` or `suppressed` → nothing was stamped; `attemptId` null otherwise → the claim is lost
   */
  async openAttempts(tx: Tx, items: AttemptToOpen[], now: Date, intervalMs: number, options: { recipientsHeld?: boolean } = {}): Promise<Map<string, OpenedAttempt>> {
    const out = new Map<string, OpenedAttempt>();
    if (items.length === 0) return out;
    if (new Set(items.map((i) => i.lease.owner)).size !== 1) throw new Error('openAttempts: leases of one owner only');
    // `recipientsHeld`: an earlier statement of `tx` took them (the batched claim, `PairLeaseRepository.claimPairs`).
    if (!options.recipientsHeld) {
      const busy = await rowsOf<{ entry_id: string }>(
        tx,
        genericPlan(`SELECT u.entry_id FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(entry_id, o, c, k)
          WHERE NOT pg_try_advisory_xact_lock_shared(${recipientLockKeys('u.o', 'u.c', 'u.k')})`),
        [items.map((i) => i.entryId), items.map((i) => i.organizationId), items.map((i) => i.channel), items.map((i) => i.pacingKey)],
      );
      for (const { entry_id } of busy) out.set(entry_id, { busy: true, suppressed: false, attemptId: null, attempts: null });
      items = items.filter((i) => !out.has(i.entryId));
      if (items.length === 0) return out;
    }
    const batch = items.map((i) => ({ pair_id: i.lease.pairId, fence: i.lease.fence, entry_id: i.entryId, organization_id: i.organizationId, channel: i.channel, pacing_key: i.pacingKey, prepared: i.prepared }));
    const rows = await rowsOf<{ entry_id: string; suppressed: boolean; attempt_id: string | null; attempts: number | null }>(
      tx,
      genericPlan(`WITH v AS (
         -- LIMIT: the batch's size, for the planner (see recordStatuses).
         SELECT * FROM jsonb_to_recordset($1::jsonb)
           AS v(pair_id bigint, fence bigint, entry_id uuid, organization_id text, channel text, pacing_key text, prepared jsonb) LIMIT $5::int
       ), suppressed AS (
         SELECT v.entry_id FROM v
          WHERE EXISTS (SELECT 1 FROM contact_suppressions s WHERE s.organization_id = v.organization_id AND s.channel = v.channel AND s.value = v.pacing_key)
       ), gate AS (
         UPDATE message_outbox_pairs p SET last_attempt_started_at = $3
           FROM v
          WHERE p.id = v.pair_id AND p.lease_owner = $2 AND p.lease_fence = v.fence AND p.lease_expires_at > $3
            AND (p.last_attempt_started_at IS NULL OR p.last_attempt_started_at + $4::interval <= $3)
            AND v.entry_id NOT IN (SELECT entry_id FROM suppressed)
          RETURNING v.entry_id, v.pair_id, v.fence, v.prepared
       ), bumped AS (
         UPDATE message_outbox e SET attempts = e.attempts + 1, updated_at = $3, prepared = COALESCE(gate.prepared, e.prepared)
           FROM gate
          WHERE e.id = gate.entry_id AND e.status = 'sending' AND e.claim_fence = gate.fence
          RETURNING e.id, e.attempts, gate.pair_id, gate.fence
       ), attempt AS (
         INSERT INTO message_outbox_attempts (entry_id, pair_id, fence, dispatcher, attempt_number, started_at, outcome)
         SELECT bumped.id, bumped.pair_id, bumped.fence, $2, bumped.attempts, $3, 'open' FROM bumped
         RETURNING id, entry_id, attempt_number
       )
       SELECT v.entry_id, (v.entry_id IN (SELECT entry_id FROM suppressed)) AS suppressed, attempt.id AS attempt_id, attempt.attempt_number AS attempts
         FROM v LEFT JOIN attempt ON attempt.entry_id = v.entry_id`),
      [JSON.stringify(batch), items[0].lease.owner, now, ms(intervalMs), batch.length],
    );
    for (const row of rows) out.set(row.entry_id, { busy: false, suppressed: row.suppressed, attemptId: row.attempt_id === null ? null : String(row.attempt_id), attempts: row.attempts });
    return out;
  }

  /**
   * Opens one attempt (`openAttempts` for a single entry).
   * `busy` or `suppressed` → nothing was stamped; `attemptId` null otherwise → the claim is lost.
   */
  async openAttempt(tx: Tx, a: AttemptToOpen & { now: Date; intervalMs: number }): Promise<OpenedAttempt> {
    const result = (await this.openAttempts(tx, [a], a.now, a.intervalMs)).get(a.entryId);
    return result ?? { busy: false, suppressed: false, attemptId: null, attempts: null };
  }

  /** Counts the attempt on the entry (still ours) and saves derived preparation output. Null when the entry is no longer ours. */
  async bumpAttempt(tx: Tx, entryId: string, fence: string, now: Date, prepared: Record<string, unknown> | null): Promise<number | null> {
    const [row] = await rowsOf<{ attempts: number }>(
      tx,
      `UPDATE message_outbox SET attempts = attempts + 1, updated_at = $3, prepared = COALESCE($4::jsonb, prepared)
        WHERE id = $1 AND status = 'sending' AND claim_fence = $2 RETURNING attempts`,
      [entryId, fence, now, prepared === null ? null : JSON.stringify(prepared)],
    );
    return row ? row.attempts : null;
  }

  /** Opens (or, for a preparation failure, opens and closes at once) an attempt row. */
  async insertAttempt(tx: Tx, entryId: string, lease: PairLease, attemptNumber: number, now: Date, end?: AttemptEnd): Promise<string> {
    const [row] = await rowsOf<{ id: string }>(
      tx,
      `INSERT INTO message_outbox_attempts (entry_id, pair_id, fence, dispatcher, attempt_number, started_at, ended_at, outcome, classification, provider_code, http_status, retry_after_ms, body)
       VALUES ($1, $2, $3, $13, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
      [entryId, lease.pairId, lease.fence, attemptNumber, now, end ? now : null, end?.outcome ?? 'open', end?.classification ?? null, end?.providerCode ?? null, end?.httpStatus ?? null, end?.retryAfterMs ?? null, end ? trimBody(end.body) : null, lease.owner],
    );
    return String(row.id);
  }

  /** Closes an open attempt. False when it was already closed (lease recovery got there first). */
  async closeAttempt(tx: Tx, attemptId: string, end: AttemptEnd, now: Date): Promise<boolean> {
    const rows = await rowsOf(
      tx,
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
    const v = transitionValues(t);
    const [row] = await rowsOf<EntryRow>(
      tx,
      `UPDATE message_outbox e
          SET ${transitionSetSql({ status: '$3', nextAttemptAt: '$4::timestamptz', providerMessageId: '$5', classification: '$6', errorCode: '$7', errorMessage: '$8', httpStatus: '$9::int', errorSubcode: '$12', errorDetails: '$13', settles: '$10::boolean', now: '$11::timestamptz' })}
        WHERE e.id = $1 AND e.status = 'sending' AND e.claim_fence = $2
        RETURNING e.*`,
      [entryId, fence, v.status, v.next_attempt_at, v.provider_message_id, v.classification, v.error_code, v.error_message, v.http_status, v.settles, now, v.error_subcode, v.error_details],
    );
    return row;
  }

  /**
   * Closes our attempt and moves our entry (`settleAttempts` for one). Undefined when the entry is
   * no longer ours (recovered while we were on the wire); the attempt is then left as recovery closed it.
   */
  async settleAttempt(tx: Tx, attemptId: string, end: AttemptEnd, entryId: string, fence: string, t: EntryTransition, now: Date): Promise<EntryRow | undefined> {
    const [row] = await this.settleAttempts(tx, [{ attemptId, end, entryId, fence, transition: t, now }]);
    return row;
  }

  /**
   * Closes several of our attempts and moves their entries in ONE statement: each entry only while
   * it is still ours (`sending` under its fence), each attempt only while open and only with its
   * entry. The caller holds the entries' pair locks.
   * @returns the moved entries (an entry recovered while on the wire is missing; its attempt is left as recovery closed it)
   */
  async settleAttempts(tx: Tx, items: AttemptToSettle[]): Promise<EntryRow[]> {
    if (items.length === 0) return [];
    const batch = items.map((i) => ({
      entry_id: i.entryId,
      fence: i.fence,
      ...transitionValues(i.transition),
      now: i.now,
      attempt_id: i.attemptId,
      outcome: i.end.outcome,
      a_classification: i.end.classification,
      provider_code: i.end.providerCode,
      a_http_status: i.end.httpStatus,
      retry_after_ms: i.end.retryAfterMs,
      body: trimBody(i.end.body),
    }));
    return rowsOf<EntryRow>(
      tx,
      genericPlan(`WITH v AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(
           entry_id uuid, fence bigint, status text, next_attempt_at timestamptz, provider_message_id text, classification text,
           error_code text, error_message text, http_status int, error_subcode text, error_details text, settles boolean, now timestamptz,
           attempt_id bigint, outcome text, a_classification text, provider_code text, a_http_status int, retry_after_ms int, body text)
         LIMIT $2::int
       ), entry AS (
         UPDATE message_outbox e
            SET ${transitionSetSql({ status: 'v.status', nextAttemptAt: 'v.next_attempt_at', providerMessageId: 'v.provider_message_id', classification: 'v.classification', errorCode: 'v.error_code', errorMessage: 'v.error_message', httpStatus: 'v.http_status', errorSubcode: 'v.error_subcode', errorDetails: 'v.error_details', settles: 'v.settles', now: 'v.now' })}
           FROM v
          WHERE e.id = v.entry_id AND e.status = 'sending' AND e.claim_fence = v.fence
          RETURNING e.*
       ), attempt AS (
         UPDATE message_outbox_attempts a
            SET ended_at = v.now, outcome = v.outcome, classification = v.a_classification, provider_code = v.provider_code,
                http_status = v.a_http_status, retry_after_ms = v.retry_after_ms, body = v.body::jsonb
           FROM v
          WHERE a.id = v.attempt_id AND a.outcome = 'open' AND v.entry_id IN (SELECT id FROM entry)
          RETURNING a.id
       )
       SELECT entry.* FROM entry`),
      [JSON.stringify(batch), batch.length],
    );
  }

  /** Puts a claimed entry back to pending without an attempt (lease lost before the gate, sender unreadable). */
  async requeueUnopened(tx: Tx, entryId: string, fence: string, now: Date, at: Date): Promise<boolean> {
    const rows = await rowsOf(
      tx,
      `UPDATE message_outbox SET status = 'pending', claim_fence = NULL, next_attempt_at = $4, updated_at = $3
        WHERE id = $1 AND status = 'sending' AND claim_fence = $2 RETURNING id`,
      [entryId, fence, now, at],
    );
    return rows.length === 1;
  }

  /** Entries left `sending` by a dispatcher whose lease expired or was superseded. */
  async findStranded(tx: Tx, now: Date, limit: number): Promise<{ id: string; pair_id: string; claim_fence: string }[]> {
    return rowsOf(
      tx,
      `SELECT e.id, e.pair_id, e.claim_fence FROM message_outbox e JOIN message_outbox_pairs p ON p.id = e.pair_id
        WHERE e.status = 'sending'
          AND (p.lease_expires_at IS NULL OR p.lease_expires_at <= $1 OR p.lease_fence <> e.claim_fence)
        ORDER BY e.seq LIMIT $2`,
      [now, limit],
    );
  }

  async findOpenAttempt(tx: Tx, entryId: string): Promise<{ id: string; attempt_number: number } | undefined> {
    const [row] = await rowsOf<{ id: string; attempt_number: number }>(tx, `SELECT id, attempt_number FROM message_outbox_attempts WHERE entry_id = $1 AND outcome = 'open' ORDER BY id DESC LIMIT 1`, [entryId]);
    return row;
  }
}

function trimBody(body: unknown): string | null {
  if (body === undefined || body === null) return null;
  // jsonb refuses the escape of a lone surrogate, and a provider's answer may hold one.
  const text = JSON.stringify(body, (_key, value: unknown) => (typeof value === 'string' ? toWellFormedText(value) : value));
  return codePointLength(text) <= ATTEMPT_BODY_MAX_CHARS ? text : JSON.stringify({ truncated: truncateText(text, ATTEMPT_BODY_MAX_CHARS) });
}
