import { Inject, Injectable } from '@nestjs/common';
import { type OutboxAmbiguousListData, type OutboxAmbiguousPage, OutboxEvents, type OutboxProviderStatusEventData, type OutboxResolveData, type OutboxResolveResult, type OutgoingMessage, type WhatsAppStatus, type WhatsAppStatusBatch } from '@touchpoint/contracts';
import { decodeCursor, encodeCursor, GroupCommit, isUuid, outboxCommitted, outboxPayload, poolOf, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { entryEvent } from '../drain/entry-events.js';
import { toEntryView } from '../enqueue/enqueue.service.js';
import { type EntryRow, OutboxRepository } from '../drain/outbox.repository.js';
import { AmbiguousRepository, type StatusRow } from './ambiguous.repository.js';
import { OutboxMetrics } from '../metrics/outbox.metrics.js';
import { type SenderRow, SendersRepository } from '../senders/senders.repository.js';

/**
 * Delivery statuses that prove the provider accepted a send (seed 004: an allow-list, so an
 * unknown future status is never taken as acceptance).
 */
export const ACCEPTING_DELIVERY_STATUSES: ReadonlySet<string> = new Set(['sent', 'delivered', 'read']);
/** Delivery statuses that prove it was rejected. */
export const REJECTING_DELIVERY_STATUSES: ReadonlySet<string> = new Set(['failed']);

/** The most statuses one write of `recordWhatsAppStatuses` takes (the statement's recordset). */
const STATUS_GROUP_MAX = 500;

/** What became of one status of a webhook: its outcome, and whether this write stored it. */
interface StatusResult {
  id: string;
  status: string;
  outcome: string;
  stored: boolean;
}

/** A provider correlation: the entry id echoed back (`biz_opaque_callback_data`) with a status. */
export interface Correlation {
  entryId: string;
  providerMessageId: string | null;
  status: string;
  /** `provider` (status webhook) or `late_answer` (the dispatcher's own answer after recovery). */
  source: 'provider' | 'late_answer';
  /** The business number the status came for; must be the entry's sender's. */
  accountId?: string;
  errorCode?: string | null;
  errorMessage?: string | null;
}

/**
 * Settles ambiguous sends — by the provider's correlation, never by a blind retry — and records
 * provider statuses (seed 004 "Ambiguity is resolved by correlation"). Six outcomes: `resolved`,
 * `resolved_failed`, `evidence_recorded`, `not_ambiguous`, `not_found`, `invalid_resolution`.
 */
@Injectable()
export class ResolutionService {
  /** Meta's status webhooks, grouped per business number (`phone_number_id`). */
  private readonly statusWrites = new GroupCommit<WhatsAppStatus, StatusResult>((phoneNumberId, statuses) => this.writeStatuses(phoneNumberId, statuses), STATUS_GROUP_MAX);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: OutboxRepository,
    private readonly ambiguous: AmbiguousRepository,
    private readonly senders: SendersRepository,
    private readonly clock: Clock,
    private readonly metrics: OutboxMetrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Resolves by correlation in a transaction of its own. */
  resolveByCorrelation(correlation: Correlation): Promise<OutboxResolveResult> {
    return this.uow.run((tx) => this.resolveInTx(tx, correlation));
  }

  /**
   * The resolution rule. The reported STATUS decides (correlation alone only proves the provider
   * knows the send): sent/delivered/read → accepted, failed → rejected, anything else is an
   * `invalid_resolution`. A row still `sending` keeps the correlation as evidence for lease
   * recovery and is not moved: its dispatcher stays the only writer of its outcome.
   */
  async resolveInTx(tx: Tx, c: Correlation): Promise<OutboxResolveResult> {
    return (await this.resolveEntry(tx, c)).result;
  }

  /**
   * `resolveInTx`, also answering the entry it read (`read` false: it read none, the status
   * proves nothing). `knownSender` is the sender the caller already read for `c.accountId`: when it
   * is the entry's, the check needs no second read.
   */
  private async resolveEntry(tx: Tx, c: Correlation, knownSender?: SenderRow): Promise<{ result: OutboxResolveResult; read: boolean; entry: EntryRow | undefined }> {
    const accepting = ACCEPTING_DELIVERY_STATUSES.has(c.status);
    const rejecting = REJECTING_DELIVERY_STATUSES.has(c.status);
    let read = false;
    let entry: EntryRow | undefined;
    const result = await (async (): Promise<OutboxResolveResult> => {
      if (!accepting && !rejecting) return { outcome: 'invalid_resolution', entry_id: c.entryId };
      entry = await this.repository.findById(tx, c.entryId, true);
      read = true;
      if (!entry) return { outcome: 'not_found', entry_id: c.entryId };
      if (c.accountId !== undefined) {
        const known = knownSender && knownSender.id === entry.sender_id ? knownSender : undefined;
        const sender = known ?? (await this.senders.findAny(tx, entry.sender_id));
        // A token naming another business number's entry is not ours to settle.
        if (!sender || sender.phone_number_id !== c.accountId) return { outcome: 'not_found', entry_id: c.entryId };
      }
      const now = this.clock.now();
      if (entry.status === 'sending') {
        if (!c.providerMessageId && accepting) return { outcome: 'invalid_resolution', entry_id: entry.id };
        await this.ambiguous.recordEvidence(tx, entry.id, { provider_message_id: c.providerMessageId ?? '', status: c.status, recorded_at: now.toISOString() }, now);
        return { outcome: 'evidence_recorded', entry_id: entry.id, status: entry.status };
      }
      if (entry.status !== 'ambiguous') return { outcome: 'not_ambiguous', entry_id: entry.id, status: entry.status };
      const settled = await this.ambiguous.settleAmbiguous(
        tx,
        entry.id,
        accepting ? 'accepted' : 'failed',
        {
          providerMessageId: c.providerMessageId,
          resolution: accepting ? 'accepted' : 'rejected',
          note: `${c.source}: status ${c.status}`,
          resolvedBy: c.source,
          errorCode: c.errorCode ?? null,
          errorMessage: c.errorMessage ?? null,
        },
        now,
      );
      if (!settled) return { outcome: 'not_ambiguous', entry_id: entry.id };
      await tx.publish(entryEvent(OutboxEvents.EntryResolved, settled, { resolution: accepting ? 'accepted' : 'rejected', resolved_by: 'provider' }));
      this.logSettled(settled, accepting);
      return { outcome: accepting ? 'resolved' : 'resolved_failed', entry_id: entry.id, status: settled.status };
    })();
    this.metrics.resolutions.inc({ outcome: result.outcome, source: c.source });
    return { result, read, entry };
  }

  /**
   * An operator settles an ambiguous entry by hand (admin CLI) with a note.
   * @returns the outcome; `not_found` also for another organization's entry
   */
  async resolveByOperator(data: OutboxResolveData): Promise<OutboxResolveResult> {
    if (typeof data?.entry_id !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'entry_id is required');
    if (data.status !== 'accepted' && data.status !== 'rejected') return { outcome: 'invalid_resolution', entry_id: data.entry_id };
    if (typeof data.note !== 'string' || data.note.trim() === '') return { outcome: 'invalid_resolution', entry_id: data.entry_id };
    const result = await this.uow.run(async (tx): Promise<OutboxResolveResult> => {
      const entry = await this.repository.findById(tx, data.entry_id, true);
      if (!entry || (data.organization_id && entry.organization_id !== data.organization_id)) return { outcome: 'not_found', entry_id: data.entry_id };
      if (entry.status !== 'ambiguous') return { outcome: 'not_ambiguous', entry_id: entry.id, status: entry.status };
      const accepted = data.status === 'accepted';
      const settled = await this.ambiguous.settleAmbiguous(tx, entry.id, accepted ? 'accepted' : 'failed', { providerMessageId: null, resolution: data.status, note: data.note.trim(), resolvedBy: `operator:${data.actor ?? 'unknown'}` }, this.clock.now());
      if (!settled) return { outcome: 'not_ambiguous', entry_id: entry.id };
      await tx.publish(entryEvent(OutboxEvents.EntryResolved, settled, { resolution: data.status, resolved_by: 'operator' }));
      this.logSettled(settled, accepted);
      return { outcome: accepted ? 'resolved' : 'resolved_failed', entry_id: entry.id, status: settled.status };
    });
    this.metrics.resolutions.inc({ outcome: result.outcome, source: 'operator' });
    return result;
  }

  /**
   * The same resolution as `resolveByOperator`, for one organization, with its refusals thrown
   * (the REST API answers them as 404 / 409 / 400).
   * @returns outcome `resolved` or `resolved_failed`
   * @throws AppError validation_failed (no organization), not_found (no such entry, or another
   *   organization's), not_ambiguous (settled already; details.status), invalid_resolution
   */
  async resolveByOperatorOrFail(data: OutboxResolveData): Promise<OutboxResolveResult> {
    if (typeof data?.organization_id !== 'string' || data.organization_id === '') throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required');
    const result = await this.resolveByOperator(data);
    switch (result.outcome) {
      case 'resolved':
      case 'resolved_failed':
        return result;
      case 'not_found':
        throw new AppError(ErrorCode.NotFound, 'outbox entry not found');
      case 'not_ambiguous':
        throw new AppError(ErrorCode.NotAmbiguous, 'the send is not ambiguous any more', { entry_id: result.entry_id, status: result.status ?? null });
      case 'invalid_resolution':
      case 'evidence_recorded':
        throw new AppError(ErrorCode.InvalidResolution, 'status must be accepted or rejected, with a note');
    }
  }

  /**
   * Ambiguous entries, oldest first, of `organization_id` (absent: every organization, for the
   * platform operator's CLI), by pages with a keyset cursor (seed 004: kept for triage, never pruned).
   * @throws AppError validation_failed (limit not 1..1000), invalid_cursor (not ours, or issued for another organization)
   */
  async listAmbiguous(data: OutboxAmbiguousListData = {}): Promise<OutboxAmbiguousPage> {
    const limit = data?.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new AppError(ErrorCode.ValidationFailed, 'limit must be an integer from 1 to 1000', { field: 'limit' });
    const filters = { organization_id: data?.organization_id ?? null };
    const after = typeof data?.cursor === 'string' && data.cursor !== '' ? decodeCursor(data.cursor, filters) : null;
    const rows = await this.uow.run((tx) => this.ambiguous.listAmbiguous(tx, data?.organization_id, limit + 1, after));
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(toEntryView), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
  }

  /**
   * Stores the statuses of one Meta webhook change durably (the gateway answers Meta only after
   * this returns), resolves ambiguous entries they correlate with, and publishes
   * `outbox.provider_status.recorded` for each new (message, status). The webhooks of one business
   * number that arrive while its last write is under way are written together, in one statement
   * (`GroupCommit`): under load Meta's statuses come one per webhook, and each statement costs
   * its planning and a commit whatever its size. A redelivered batch changes nothing: each of its
   * statuses is a `duplicate`, as is a repeat within the batch or within the group it was written with.
   * @returns how many statuses were new, and each well-formed status's outcome in batch order
   * @throws AppError validation_failed (no phone_number_id, or no statuses array)
   */
  async recordWhatsAppStatuses(batch: WhatsAppStatusBatch): Promise<{ stored: number; outcomes: { id: string; status: string; outcome: string }[] }> {
    if (typeof batch?.phone_number_id !== 'string' || !Array.isArray(batch.statuses)) throw new AppError(ErrorCode.ValidationFailed, 'phone_number_id and statuses are required');
    const statuses = batch.statuses.filter((s) => typeof s?.id === 'string' && typeof s.status === 'string');
    const results = await this.statusWrites.submit(batch.phone_number_id, statuses);
    return { stored: results.filter((r) => r.stored).length, outcomes: results.map(({ id, status, outcome }) => ({ id, status, outcome })) };
  }

  /**
   * Writes the well-formed statuses of one or more webhooks of `phoneNumberId` (one group of
   * `statusWrites`). The batch is one autocommitted statement (`AmbiguousRepository.recordStatuses`);
   * only the statuses that would settle an ambiguous entry then take a transaction, which locks
   * their entries in id order and resolves them one by one (`recordOne`).
   * @returns one result per status, in order: its outcome, and whether it was stored by this write
   */
  private async writeStatuses(phoneNumberId: string, statuses: WhatsAppStatus[]): Promise<StatusResult[]> {
    const results: StatusResult[] = statuses.map((s) => ({ id: s.id, status: s.status, outcome: 'duplicate', stored: false }));
    const now = this.clock.now();
    const seen = new Set<string>();
    const rows: StatusRow[] = [];
    statuses.forEach((s, ord) => {
      const key = JSON.stringify([s.id, s.status]);
      if (seen.has(key)) return;
      seen.add(key);
      rows.push(statusRow(s, ord, now));
    });
    const { verdicts, published } = await this.ambiguous.recordStatuses(poolOf(this.uow.dataSource), phoneNumberId, rows, now);
    if (published) outboxCommitted(this.uow.dataSource, this.uow.schema);
    const byOrd = new Map(rows.map((r) => [r.ord, r]));
    const slow: number[] = [];
    const tokens = new Set<string>();
    for (const v of verdicts) {
      const row = byOrd.get(v.ord);
      if (v.slow) {
        slow.push(v.ord);
        if (row?.token) tokens.add(row.token);
      }
      if (!v.stored) continue;
      results[v.ord].outcome = v.outcome;
      results[v.ord].stored = true;
      // As `resolveEntry` counts each correlated status it resolves.
      if (row?.correlation != null) this.metrics.resolutions.inc({ outcome: v.outcome, source: 'provider' });
    }
    if (slow.length === 0) return results;
    const settled = await this.uow.run(async (tx) => {
      const owner = await this.senders.findByPhoneNumberId(tx, phoneNumberId);
      await this.ambiguous.lockEntries(tx, [...tokens]);
      const out: { ord: number; outcome: string | null }[] = [];
      for (const ord of slow) out.push({ ord, outcome: await this.recordOne(tx, phoneNumberId, owner, statuses[ord]) });
      return out;
    });
    for (const { ord, outcome } of settled) {
      if (outcome === null) continue;
      results[ord].outcome = outcome;
      results[ord].stored = true;
    }
    return results;
  }

  /**
   * One status in the caller's transaction, the way the whole batch was once recorded: stored,
   * resolved against the entry its token names (locked), noted with its entry and outcome, and
   * published. For the statuses `recordStatuses` leaves `slow`.
   * @returns the outcome, or null when that (message, status) was stored already
   */
  private async recordOne(tx: Tx, phoneNumberId: string, owner: SenderRow | undefined, s: WhatsAppStatus): Promise<string | null> {
    const providerTimestamp = providerTimeOf(s, this.clock.now());
    const token = typeof s.biz_opaque_callback_data === 'string' ? s.biz_opaque_callback_data : null;
    const statusId = await this.ambiguous.insertProviderStatus(tx, { channel: 'whatsapp', accountId: phoneNumberId, providerMessageId: s.id, status: s.status, providerTimestamp, recipient: s.recipient_id ?? null, correlation: token, body: s }, this.clock.now());
    if (statusId === null) return null;
    const firstError = Array.isArray(s.errors) ? s.errors[0] : undefined;
    let outcome = 'no_correlation';
    // The entry the resolution read (locked) serves below too: its ids and context do not change when it settles.
    let resolved: { read: boolean; entry: EntryRow | undefined } = { read: false, entry: undefined };
    if (token) {
      const r = await this.resolveEntry(
        tx,
        {
          entryId: token,
          providerMessageId: s.id,
          status: s.status,
          source: 'provider',
          accountId: phoneNumberId,
          errorCode: firstError ? String(firstError.code) : null,
          errorMessage: firstError?.message ?? firstError?.title ?? null,
        },
        owner,
      );
      outcome = r.result.outcome;
      resolved = r;
    }
    const byToken = token ? (resolved.read ? resolved.entry : await this.repository.findById(tx, token)) : undefined;
    const entry: EntryRow | undefined = byToken ?? (await this.repository.findByProviderMessageId(tx, s.id));
    const ours = entry && owner && entry.sender_id === owner.id ? entry : undefined;
    await this.ambiguous.noteStatusOutcome(tx, statusId, ours?.id ?? null, outcome);
    const organizationId = ours?.organization_id ?? owner?.organization_id ?? null;
    if (organizationId) await tx.publish({ ...statusEvent(s, providerTimestamp, ours ?? null), organization_id: organizationId });
    return outcome;
  }

  private logSettled(row: EntryRow, accepted: boolean): void {
    const fields = { organization_id: row.organization_id, entry_id: row.id, idempotency_key: row.idempotency_key, resolved_by: row.resolved_by, ...row.log_context };
    if (accepted) this.logger.info({ event: 'outbox.ambiguous_resolved', ...fields }, 'ambiguous send settled as accepted');
    // The dispatcher that would normally log this is long gone: the row's log_context carries the correlation.
    else this.logger.warn({ event: 'outbox.delivery_failed', classification: 'ambiguous', ...fields }, 'ambiguous send settled as failed');
  }
}

/** A status's own time (Unix seconds, as Meta sends it), or `fallback` when it has none that is usable. */
function providerTimeOf(s: WhatsAppStatus, fallback: Date): Date {
  const seconds = Number(s.timestamp);
  const at = Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : fallback;
  return Number.isNaN(at.getTime()) ? fallback : at;
}

/** `outbox.provider_status.recorded` for `s`, about `entry` (null: no entry of this number); the caller sets the organization. */
function statusEvent(s: WhatsAppStatus, providerTimestamp: Date, entry: EntryRow | null): OutgoingMessage<typeof OutboxEvents.ProviderStatusRecorded> {
  const firstError = Array.isArray(s.errors) ? s.errors[0] : undefined;
  const data: OutboxProviderStatusEventData = {
    channel: 'whatsapp',
    provider_message_id: s.id,
    status: s.status,
    provider_timestamp: providerTimestamp.toISOString(),
    recipient: s.recipient_id ?? null,
    entry_id: entry?.id ?? null,
    idempotency_key: entry?.idempotency_key ?? null,
    log_context: entry?.log_context ?? null,
    error_code: firstError ? String(firstError.code) : null,
    error_message: firstError?.message ?? firstError?.title ?? null,
    error_details: typeof firstError?.error_data?.details === 'string' ? firstError.error_data.details : null,
  };
  return { event_id: `${OutboxEvents.ProviderStatusRecorded}:${s.id}:${s.status}`, type: OutboxEvents.ProviderStatusRecorded, organization_id: '', data };
}

/** `s` as a row of `AmbiguousRepository.recordStatuses`; its event's entry fields and organization are the statement's to fill. */
function statusRow(s: WhatsAppStatus, ord: number, now: Date): StatusRow {
  const token = typeof s.biz_opaque_callback_data === 'string' ? s.biz_opaque_callback_data : null;
  const providerTimestamp = providerTimeOf(s, now);
  const event = statusEvent(s, providerTimestamp, null);
  return {
    ord,
    id: s.id,
    status: s.status,
    provider_timestamp: providerTimestamp.toISOString(),
    recipient: s.recipient_id ?? null,
    correlation: token,
    // A token that is no uuid names no entry (`OutboxRepository.findById`).
    token: isUuid(token) ? token : null,
    verdict: ACCEPTING_DELIVERY_STATUSES.has(s.status) ? 'accept' : REJECTING_DELIVERY_STATUSES.has(s.status) ? 'reject' : null,
    body: s,
    event_id: event.event_id,
    payload: outboxPayload(event, now.toISOString()),
  };
}
