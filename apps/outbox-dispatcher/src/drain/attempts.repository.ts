import { Injectable } from '@nestjs/common';
import type { OutboxClassification } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { codePointLength, toWellFormedText, truncateText } from '@touchpoint/text';
import { type EntryRow, ms } from './outbox.repository.js';
import type { PairLease } from './pair-lease.repository.js';
import { rowsOf } from '@touchpoint/database';

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
 * The attempts of a claimed entry and how they end: the pre-wire gate that opens one, its close,
 * the entry's move to its next state (`transitionClaimed`, `settleAttempt`), and what lease
 * recovery reads of entries left `sending`. Every write names the claim fence.
 */
@Injectable()
export class AttemptsRepository {
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
    const terminal = t.status !== 'pending';
    const [row] = await rowsOf<EntryRow>(
      tx,
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
        entryId,
        fence,
        t.status,
        t.nextAttemptAt ?? null,
        t.providerMessageId ?? null,
        t.classification,
        t.errorCode,
        t.errorMessage ? truncateText(t.errorMessage, 1000) : null,
        t.httpStatus,
        terminal && t.status !== 'ambiguous',
        now,
        attemptId,
        end.outcome,
        end.classification,
        end.providerCode,
        end.httpStatus,
        end.retryAfterMs,
        trimBody(end.body),
        ...errorExtras(t),
      ],
    );
    return row;
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
