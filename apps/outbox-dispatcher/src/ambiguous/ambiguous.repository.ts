import { Injectable } from '@nestjs/common';
import { OutboxEvents } from '@touchpoint/contracts';
import { cursorAtSql, type Queryable, rowsOf, type Tx, genericPlan } from '@touchpoint/database';
import type { Evidence, EntryRow } from '../drain/outbox.repository.js';

/** One new provider status for `recordStatuses`, in the order of its batch (`ord`). */
export interface StatusRow {
  ord: number;
  /** The provider message id (`wamid`). */
  id: string;
  status: string;
  provider_timestamp: string;
  recipient: string | null;
  /** The raw `biz_opaque_callback_data`, as stored. */
  correlation: string | null;
  /** `correlation` when it can be an entry id (a uuid), else null. */
  token: string | null;
  /** What the status proves of a send: `accept`, `reject`, or null (it proves nothing). */
  verdict: 'accept' | 'reject' | null;
  body: unknown;
  event_id: string;
  /** `outboxPayload` of its `outbox.provider_status.recorded`; the statement fills in the organization and the entry's fields. */
  payload: string;
}

/** What `recordStatuses` did with one status. */
export interface StatusVerdict {
  ord: number;
  /** The resolution outcome stored with it (`no_correlation`, `evidence_recorded`, `not_ambiguous`, ...). */
  outcome: string;
  /** Left for the transactional path: it would settle an ambiguous entry (or its entry moved under the statement). */
  slow: boolean;
  /** Stored by the statement (false: slow, or a duplicate). */
  stored: boolean;
}

/**
 * Ambiguous sends and their resolution (seed 004 `evidence_recorded`): correlation evidence,
 * settling an ambiguous entry, the operator's list, and the provider statuses that resolve them.
 */
@Injectable()
export class AmbiguousRepository {
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
    const [row] = await rowsOf<EntryRow>(
      tx,
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
  async insertProviderStatus(tx: Tx, s: { channel: string; accountId: string; providerMessageId: string; status: string; providerTimestamp: Date; recipient: string | null; correlation: string | null; body: unknown }, now: Date): Promise<string | null> {
    const [row] = await rowsOf<{ id: string }>(
      tx,
      `INSERT INTO provider_statuses (channel, account_id, provider_message_id, status, provider_timestamp, recipient, correlation, body, received_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (provider_message_id, status) DO NOTHING RETURNING id`,
      [s.channel, s.accountId, s.providerMessageId, s.status, s.providerTimestamp, s.recipient, s.correlation, JSON.stringify(s.body), now],
    );
    return row ? String(row.id) : null;
  }

  /**
   * Records a batch of provider statuses in ONE autocommitted statement (a data-modifying CTE), the
   * same writes as `insertProviderStatus`, `recordEvidence`, `noteStatusOutcome` and the
   * `outbox.provider_status.recorded` event per status would make one status at a time, minus the
   * BEGIN/COMMIT and four round trips per status:
   * - a status already stored (a redelivery) is skipped with everything it would cause: the
   *   statement is idempotent;
   * - a status correlated with a `sending` entry of this number stores evidence on it (the last of
   *   the batch per entry, as one-by-one processing leaves it); the entries are locked in id order
   *   and re-checked (`status = 'sending'`) under the lock, since the dispatcher may settle the send
   *   meanwhile;
   * - a status that would settle an `ambiguous` entry, or whose `sending` entry moved under the
   *   statement, is NOT stored: it goes back `slow`, with every status of the batch with the same
   *   provider message id, for `ResolutionService`'s transactional path (seed 004 "Ambiguity is
   *   resolved by correlation": the settle, its event and the status commit together);
   * - each stored status keeps its entry (by token, else by provider message id; only the number's
   *   own) and outcome, and its event, organization of the entry or else of the number, is written
   *   if and only if the status row was (no organization: no event).
   * @param accountId the business number the statuses came for (`phone_number_id`)
   * @param now stamps `received_at`, the evidence's `recorded_at` and the entries' `updated_at`
   * @returns one verdict per row, and whether any event row was written (then the caller wakes the relay)
   */
  async recordStatuses(db: Queryable, accountId: string, rows: StatusRow[], now: Date): Promise<{ verdicts: StatusVerdict[]; published: boolean }> {
    if (rows.length === 0) return { verdicts: [], published: false };
    const result = await rowsOf<StatusVerdict & { published: number }>(
      db,
      genericPlan(`WITH v AS (
         -- LIMIT: the batch's own size, so the planner knows it (a recordset is 100 rows to it, which
         -- makes it hash-join whole tables).
         SELECT * FROM jsonb_to_recordset($3::jsonb) AS v(ord int, id text, status text, provider_timestamp timestamptz, recipient text, correlation text, token uuid, verdict text, body jsonb, event_id text, payload text) LIMIT $6::int
       ), owner AS (
         SELECT id, organization_id FROM senders WHERE phone_number_id = $1::text AND removed_at IS NULL LIMIT 1
       ), c AS (
         -- The entry a status is about: the one its token names, else the one with its provider id.
         SELECT v.*, te.id AS token_entry, te.status AS token_status, ts.phone_number_id AS token_number,
                COALESCE(te.id, pe.id) AS en_id, COALESCE(te.sender_id, pe.sender_id) AS en_sender, COALESCE(te.organization_id, pe.organization_id) AS en_org,
                COALESCE(te.idempotency_key, pe.idempotency_key) AS en_key, COALESCE(te.log_context, pe.log_context) AS en_ctx
           FROM v
           LEFT JOIN message_outbox te ON te.id = v.token
           LEFT JOIN senders ts ON ts.id = te.sender_id
           LEFT JOIN LATERAL (SELECT id, sender_id, organization_id, idempotency_key, log_context FROM message_outbox WHERE provider_message_id = v.id LIMIT 1) pe ON te.id IS NULL
          WHERE NOT EXISTS (SELECT 1 FROM provider_statuses p WHERE p.provider_message_id = v.id AND p.status = v.status)
       ), r0 AS (
         -- ResolutionService.resolveEntry's rule, 'settle' standing for resolved / resolved_failed.
         SELECT c.*,
                CASE WHEN c.correlation IS NULL THEN 'no_correlation'
                     WHEN c.verdict IS NULL THEN 'invalid_resolution'
                     WHEN c.token_entry IS NULL OR c.token_number IS DISTINCT FROM $1::text THEN 'not_found'
                     WHEN c.token_status = 'sending' AND c.verdict = 'accept' AND c.id = '' THEN 'invalid_resolution'
                     WHEN c.token_status = 'sending' THEN 'evidence_recorded'
                     WHEN c.token_status = 'ambiguous' THEN 'settle'
                     ELSE 'not_ambiguous' END AS outcome,
                CASE WHEN c.en_sender = o.id THEN c.en_id END AS ours_id,
                CASE WHEN c.en_sender = o.id THEN c.en_key END AS ours_key,
                CASE WHEN c.en_sender = o.id THEN c.en_ctx END AS ours_ctx,
                COALESCE(CASE WHEN c.en_sender = o.id THEN c.en_org END, o.organization_id) AS event_org
           FROM c LEFT JOIN owner o ON true
       ), pick AS (
         SELECT DISTINCT ON (token_entry) token_entry, id, status FROM r0 WHERE outcome = 'evidence_recorded' ORDER BY token_entry, ord DESC
       ), locked AS (
         -- Id order: two batches that share entries never lock them in opposite orders.
         SELECT e.id FROM message_outbox e WHERE e.id IN (SELECT token_entry FROM pick) AND e.status = 'sending' ORDER BY e.id FOR UPDATE
       ), evidence AS (
         UPDATE message_outbox e
            SET evidence = jsonb_build_object('provider_message_id', p.id, 'status', p.status, 'recorded_at', $4::text), updated_at = $2::timestamptz
           FROM pick p
          WHERE e.id = p.token_entry AND e.id IN (SELECT id FROM locked) AND e.status = 'sending'
         RETURNING e.id
       ), slow AS (
         SELECT DISTINCT id FROM r0 WHERE outcome = 'settle' OR (outcome = 'evidence_recorded' AND token_entry NOT IN (SELECT id FROM evidence))
       ), r AS (
         SELECT r0.*, r0.id IN (SELECT id FROM slow) AS slow FROM r0
       ), ins AS (
         INSERT INTO provider_statuses (channel, account_id, provider_message_id, status, provider_timestamp, recipient, correlation, body, received_at, entry_id, resolution_outcome)
         SELECT 'whatsapp', $1::text, id, status, provider_timestamp, recipient, correlation, body, $2::timestamptz, ours_id, outcome FROM r WHERE NOT slow ORDER BY ord
         ON CONFLICT (provider_message_id, status) DO NOTHING
         RETURNING provider_message_id, status
       ), ev AS (
         INSERT INTO outbox_events (event_id, type, organization_id, payload)
         SELECT r.event_id, $5::text, r.event_org,
                r.payload::jsonb || jsonb_build_object('organization_id', r.event_org, 'data', (r.payload::jsonb -> 'data') || jsonb_build_object('entry_id', r.ours_id, 'idempotency_key', r.ours_key, 'log_context', r.ours_ctx))
           FROM r JOIN ins ON ins.provider_message_id = r.id AND ins.status = r.status
          WHERE r.event_org IS NOT NULL
          ORDER BY r.ord
         ON CONFLICT (event_id) DO NOTHING RETURNING 1
       )
       SELECT r.ord, r.outcome, r.slow, EXISTS (SELECT 1 FROM ins WHERE ins.provider_message_id = r.id AND ins.status = r.status) AS stored, (SELECT count(*)::int FROM ev) AS published
         FROM r ORDER BY r.ord`),
      [accountId, now, JSON.stringify(rows), now.toISOString(), OutboxEvents.ProviderStatusRecorded, rows.length],
    );
    return { verdicts: result.map((x) => ({ ord: Number(x.ord), outcome: x.outcome, slow: x.slow, stored: x.stored })), published: (result[0]?.published ?? 0) > 0 };
  }

  /** Locks entries in id order (the order every writer of several entries takes). */
  async lockEntries(tx: Tx, entryIds: string[]): Promise<void> {
    if (entryIds.length) await rowsOf(tx, `SELECT id FROM message_outbox WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, [entryIds]);
  }

  async noteStatusOutcome(tx: Tx, statusId: string, entryId: string | null, outcome: string): Promise<void> {
    await rowsOf(tx, `UPDATE provider_statuses SET entry_id = $2, resolution_outcome = $3 WHERE id = $1`, [statusId, entryId, outcome]);
  }
}
