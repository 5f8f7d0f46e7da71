import { Inject, Injectable } from '@nestjs/common';
import { OUTBOX_CHANNELS, OutboxEvents, type OutboxSuppressionData, type OutboxSuppressionListData, type OutboxSuppressionPage, type OutboxSuppressionRemoveResult, type SuppressionCheckData, type SuppressionCheckResult } from '@touchpoint/contracts';
import { decodeCursor, encodeCursor, poolOf, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { toRecipientKey } from '@touchpoint/phone';
import { Clock, sleep } from '@touchpoint/time';
import { entryEvent } from '../drain/entry-events.js';
import { SuppressionsRepository } from './suppressions.repository.js';

/**
 * Longest `addInForce` waits for the sends already past the gate to its value, ms (ours): a
 * provider answers most sends well within it, and with `ADD_LOCK_TIMEOUT_MS` and the add's own
 * statements it stays inside the caller's deadline (`putSuppressionsInForce`, 1.5 s).
 */
export const IN_FLIGHT_WAIT_MS = 800;
/**
 * Longest `addInForce`'s transaction waits for a lock, ms (ours): the recipient's lock is held by
 * claims for a few ms, but a consumer batch adding the same address holds it to its commit. Past
 * it the add fails (the caller answers 503; its repeat is harmless).
 */
export const ADD_LOCK_TIMEOUT_MS = 400;
/** How often that wait reads the open attempts, ms (ours). */
const IN_FLIGHT_POLL_MS = 20;

/** Most values one suppression check reads (ours). */
const MAX_CHECK_VALUES = 500;
/** Rows of one page of the list: default and most (ours; the console shows one page at a time). */
export const SUPPRESSION_PAGE_DEFAULT = 50;
export const SUPPRESSION_PAGE_MAX = 200;
/** Longest search text and note, characters (ours). */
const MAX_QUERY_LENGTH = 320;
const MAX_NOTE_LENGTH = 1000;

/** What adding a suppression did. */
export interface SuppressionAdded {
  /** The value as the list keys it (the pacing key: phone digits, a lower-cased email). */
  value: string;
  /** False when the value was on the list already. */
  created: boolean;
  /** Ids of the queued entries cancelled with it. */
  cancelled_entry_ids: string[];
}

/** What `addInForce` did: the add, and the sends still on the wire when it answered. */
export interface SuppressionInForce extends SuppressionAdded {
  /**
   * Attempts to the value that had passed the gate before the add took hold and had no provider
   * answer recorded when it answered (0 normally). Their requests may still be on their way.
   */
  in_flight: number;
}

/**
 * The do-not-contact list next to the wire (DESIGN §4; seed 003 §5 `contact_suppressions`, "stop
 * means stop on every channel"). Every way a value gets on the list goes through `add`: an
 * `outbox.suppress` command (outreach: opt-out, bounce, unsubscribe link), messaging's
 * `messaging.suppression.requested` (an opt-out it saw: STOP on WhatsApp, an opt-out by email), and
 * tests. `add` cancels the value's queued entries in its own transaction, so when the row commits
 * nothing to that address that has not started its attempt can still leave; the pre-wire gate
 * (`AttemptsRepository.openAttempt`) refuses the rest, whoever enqueued them.
 */
@Injectable()
export class SuppressionsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: SuppressionsRepository,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * The subset of `data.values` on the organization's do-not-contact list, keyed like the senders
   * key them (a value that is no address of its channel is never on it).
   * @throws AppError validation_failed (no organization, or more than 500 values)
   */
  async check(data: SuppressionCheckData): Promise<SuppressionCheckResult> {
    if (typeof data?.organization_id !== 'string' || !Array.isArray(data.values) || data.values.length > MAX_CHECK_VALUES) throw new AppError(ErrorCode.ValidationFailed, `organization_id and at most ${MAX_CHECK_VALUES} values are required`);
    const keyed = data.values.map((v) => ({ v, key: toRecipientKey(v.channel, v.value) })).filter((k): k is { v: SuppressionCheckData['values'][number]; key: string } => k.key !== null);
    if (keyed.length === 0) return { suppressed: [] };
    const rows = await this.repository.onList(
      poolOf(this.uow.dataSource),
      data.organization_id,
      keyed.map((k) => ({ channel: k.v.channel, value: k.key })),
    );
    const hit = new Set(rows.map((r) => `${r.channel}\u0000${r.value}`));
    return { suppressed: keyed.filter((k) => hit.has(`${k.v.channel}\u0000${k.key}`)).map((k) => k.v) };
  }

  /**
   * Puts `value` on the organization's list for `channel` and cancels (`outbox.entry.cancelled`,
   * `reason: 'suppressed'`) every `pending` entry to it, in `tx` when given (a bus handler's inbox
   * transaction) or in its own (its lock waits bounded by `lockTimeoutMs` when given). It first
   * takes the recipient's lock exclusively (`recipientLockKeys`), so no gate opens an attempt to it
   * meanwhile. Idempotent: a repeat adds nothing and finds nothing left to cancel.
   * @throws AppError validation_failed (organization_id, channel), invalid_recipient (value)
   */
  async add(data: OutboxSuppressionData, tx?: Tx, lockTimeoutMs?: number): Promise<SuppressionAdded> {
    const { organizationId, channel, value } = this.keyOf(data);
    const work = async (t: Tx): Promise<SuppressionAdded> => {
      // First: every gate that read the list before this row exists has committed its attempt once this returns.
      await this.repository.lockRecipient(t, organizationId, channel, value);
      const now = this.clock.now();
      const created = await this.repository.add(t, organizationId, channel, value, data.reason ?? null, now, { note: noteOf(data), addedBy: data.actor ?? null });
      const cancelled = await this.repository.cancelPendingTo(t, organizationId, channel, value, now);
      for (const row of cancelled) await t.publish(entryEvent(OutboxEvents.EntryCancelled, row, { reason: 'suppressed' }));
      if (created || cancelled.length) {
        this.logger.info({ event: 'outbox.suppression_added', organization_id: organizationId, channel, reason: data.reason ?? null, created, cancelled: cancelled.length, entry_ids: cancelled.map((r) => r.id) }, 'address suppressed; its queued sends cancelled');
      }
      return { value, created, cancelled_entry_ids: cancelled.map((r) => r.id) };
    };
    return tx ? work(tx) : this.uow.run(work, { lockTimeoutMs });
  }

  /**
   * `add` in its own transaction (lock waits bounded by `ADD_LOCK_TIMEOUT_MS`), answered once
   * nothing more to the value can reach the provider: the row is committed (later gates refuse the
   * value, `pending` entries are cancelled) and every attempt that passed a gate before it has its
   * provider's answer recorded. Waits at most `IN_FLIGHT_WAIT_MS` for those; past it, `in_flight`
   * says how many were still out (a slow provider, or a dispatcher that died mid-send) and a
   * warning is logged: those opened before the stop, but their requests may still be on the way.
   * Every stop is put in force with it before it is acknowledged (`outbox.suppressions.add`; seed
   * 003 §5 "stop means stop").
   * @throws AppError validation_failed (organization_id, channel), invalid_recipient (value); the
   *   database's lock_timeout error when a lock was not had in time
   */
  async addInForce(data: OutboxSuppressionData): Promise<SuppressionInForce> {
    const added = await this.add(data, undefined, ADD_LOCK_TIMEOUT_MS);
    // `add` validated the organization and the channel; `added.value` is the value as the list keys it.
    const inFlight = await this.openAttemptsAfter(data.organization_id, data.channel, added.value, IN_FLIGHT_WAIT_MS);
    if (inFlight > 0) this.logger.warn({ event: 'outbox.suppression_in_flight', organization_id: data.organization_id, channel: data.channel, in_flight: inFlight }, 'suppression in force; sends already on the wire to it had no answer yet');
    return { ...added, in_flight: inFlight };
  }

  /** The attempts to the recipient still open once none is, or once `waitMs` went by, read every `IN_FLIGHT_POLL_MS`. */
  private async openAttemptsAfter(organizationId: string, channel: string, recipientKey: string, waitMs: number): Promise<number> {
    const db = poolOf(this.uow.dataSource);
    const deadline = performance.now() + waitMs;
    for (;;) {
      const open = await this.repository.openAttemptsTo(db, organizationId, channel, recipientKey);
      if (open === 0 || performance.now() >= deadline) return open;
      await sleep(IN_FLIGHT_POLL_MS);
    }
  }

  /**
   * Takes `value` off the list (seed 003 §5: never code, a person asks for it) and records the
   * removal with `data.note` and `data.actor` (`contact_suppression_removals`). Sends cancelled
   * while it was on the list stay cancelled. `removed` is false when the value was not on the list
   * (then nothing is recorded).
   * @throws AppError validation_failed (organization, channel, a note over 1000 characters), invalid_recipient
   */
  async remove(data: OutboxSuppressionData, tx?: Tx): Promise<OutboxSuppressionRemoveResult> {
    const { organizationId, channel, value } = this.keyOf(data);
    const note = noteOf(data);
    const work = async (t: Tx): Promise<OutboxSuppressionRemoveResult> => {
      const gone = await this.repository.remove(t, organizationId, channel, value, this.clock.now(), { note, removedBy: data.actor ?? null });
      if (gone) this.logger.info({ event: 'outbox.suppression_removed', organization_id: organizationId, channel, actor: data.actor ?? null }, 'address taken off the do-not-contact list');
      return { removed: gone !== null, channel, value, note: gone ? note : null, removed_at: gone ? new Date(gone.removed_at).toISOString() : null };
    };
    return tx ? work(tx) : this.uow.run(work);
  }

  /**
   * One page of the organization's list, newest first. `q` matches part of the value or of its
   * note, any case; a `q` made of digits and phone punctuation (`+55 (11) 98765-4321`) is searched
   * as its digits, since phone numbers are keyed as digits.
   * @throws AppError validation_failed (limit not 1..200, q over 320 characters, unknown channel), invalid_cursor (not ours, or issued for another q/channel/organization)
   */
  async list(data: OutboxSuppressionListData): Promise<OutboxSuppressionPage> {
    const limit = data?.limit ?? SUPPRESSION_PAGE_DEFAULT;
    if (typeof data?.organization_id !== 'string' || data.organization_id === '') throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required');
    if (!Number.isInteger(limit) || limit < 1 || limit > SUPPRESSION_PAGE_MAX) throw new AppError(ErrorCode.ValidationFailed, `limit must be an integer from 1 to ${SUPPRESSION_PAGE_MAX}`, { field: 'limit' });
    if (data.channel !== undefined && !OUTBOX_CHANNELS.includes(data.channel)) throw new AppError(ErrorCode.ValidationFailed, 'channel must be whatsapp, email or linkedin', { field: 'channel' });
    const raw = typeof data.q === 'string' ? data.q.trim() : '';
    if (raw.length > MAX_QUERY_LENGTH) throw new AppError(ErrorCode.ValidationFailed, `q must be at most ${MAX_QUERY_LENGTH} characters`, { field: 'q' });
    const contains = /^[\d\s+().-]+$/.test(raw) && /\d/.test(raw) ? raw.replace(/\D/g, '') : raw;
    const filters = { organization_id: data.organization_id, q: contains || null, channel: data.channel ?? null };
    const after = typeof data.cursor === 'string' && data.cursor !== '' ? decodeCursor(data.cursor, filters) : null;
    const rows = await this.repository.page(poolOf(this.uow.dataSource), data.organization_id, { contains: contains || undefined, channel: data.channel }, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => ({ id: r.public_id, channel: r.channel as OutboxSuppressionData['channel'], value: r.value, reason: r.reason, note: r.note, added_by: r.added_by, created_at: new Date(r.created_at).toISOString() })),
      next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.public_id }, filters) : null,
    };
  }

  private keyOf(data: OutboxSuppressionData): { organizationId: string; channel: OutboxSuppressionData['channel']; value: string } {
    if (typeof data?.organization_id !== 'string' || data.organization_id === '' || !OUTBOX_CHANNELS.includes(data.channel)) {
      throw new AppError(ErrorCode.ValidationFailed, 'organization_id and a channel are required');
    }
    // Keyed like the pacing key, so the gate's lookup by the entry's pacing key finds it.
    const value = typeof data.value === 'string' ? toRecipientKey(data.channel, data.value) : null;
    if (!value) throw new AppError(ErrorCode.InvalidRecipient, 'value is not an address of this channel');
    return { organizationId: data.organization_id, channel: data.channel, value };
  }
}

/** The note, trimmed (empty: none). @throws AppError validation_failed when over 1000 characters */
function noteOf(data: OutboxSuppressionData): string | null {
  const note = typeof data?.note === 'string' ? data.note.trim() : '';
  if (note.length > MAX_NOTE_LENGTH) throw new AppError(ErrorCode.ValidationFailed, `note must be at most ${MAX_NOTE_LENGTH} characters`, { field: 'note' });
  return note === '' ? null : note;
}
