import { Inject, Injectable } from '@nestjs/common';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { OutboxEvents } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { type Classified, retryDelayMs } from '../classification/classification.js';
import { OutboxMetrics } from '../metrics/outbox.metrics.js';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { type DispatchEntry, type PreparedSend, type ProviderAdapter, ProviderCallError, type SendAccepted, type SenderCredentials } from '../providers/provider-adapter.js';
import { ProviderRegistry } from '../providers/provider-registry.js';
import { ResolutionService } from '../ambiguous/resolution.service.js';
import { SendersService, TOKEN_INVALID } from '../senders/senders.service.js';
import { entryEvent } from './entry-events.js';
import { failure, settleByEvidence } from './settle-helpers.js';
import type { Tx } from '@touchpoint/database';
import { type AttemptEnd, type EntryRow, type EntryTransition, OutboxRepository, type PairLease } from './outbox.repository.js';

/** What one drain step did. */
export interface StepResult {
  /** A pair was claimed (work may follow at once). */
  claimed: boolean;
  /** An attempt was opened. */
  attempted: boolean;
  /** When nothing was claimed: the earliest time a pair becomes workable (null = nothing pending). */
  nextDueAt: Date | null;
  /** An entry was requeued for later: the caller owes a wake-up at `nextDueAt` of its pair. */
  requeued: boolean;
}

/** Retry of a failed sender read (database blip), ms. */
const SENDER_READ_RETRY_MS = 5000;

/** An attempt that was opened: its id, its number, and when it started (the pacing stamp). */
interface Opened {
  attemptId: string;
  attempts: number;
  startedAt: Date;
}

/** The adapter's view of an entry row. */
function toDispatchEntry(entry: EntryRow): DispatchEntry {
  return { entryId: entry.id, organizationId: entry.organization_id, recipient: entry.recipient, payload: entry.payload, prepared: entry.prepared, logContext: entry.log_context ?? {} };
}

/** Raised inside the attempt-opening transaction to roll it back when the entry is no longer ours. */
class LeaseLost extends Error {}

/** A preparation failure that is not the provider's: the sender cannot send. */
class SenderUnavailable extends Error {
  constructor(
    message: string,
    /** The dispatcher disconnected it after a 190: its entries fail `sender_token_invalid`. */
    readonly tokenInvalid = false,
  ) {
    super(message);
  }
}

/**
 * Claims a pair and works its head: prepare → open the attempt → send → record (seed 004 "Dispatch
 * order: prepare, then open the attempt, then send"). Every write names the lease fence, so a
 * dispatcher that lost its claim cannot overwrite the one that took it over.
 */
@Injectable()
export class DispatchService {
  /** This process's name in lease rows. */
  readonly owner: string;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: OutboxRepository,
    private readonly senders: SendersService,
    private readonly providers: ProviderRegistry,
    private readonly resolution: ResolutionService,
    private readonly clock: Clock,
    private readonly metrics: OutboxMetrics,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
  ) {
    this.owner = config.OUTBOX_INSTANCE_ID ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  }

  private get interval(): number {
    return this.config.WHATSAPP_PAIR_MIN_SEND_INTERVAL_MS;
  }

  /**
   * Claims ONE due pair and works its FIFO head. When preparing the head needs no provider call
   * (no media upload), it is prepared and its attempt opened in the claim's own transaction: one
   * commit fewer per send, and nothing variable-length runs under the locks.
   */
  async step(): Promise<StepResult> {
    const now = this.clock.now();
    type Claimed =
      | { kind: 'none'; nextDueAt: Date | null }
      | { kind: 'released' }
      | { kind: 'claimed'; lease: PairLease; entry: EntryRow }
      | { kind: 'opened'; lease: PairLease; entry: EntryRow; opened: Opened; prepared: PreparedSend; sender: SenderCredentials; adapter: ProviderAdapter }
      | { kind: 'suppressed'; entry: EntryRow };
    let claimed: Claimed;
    try {
      claimed = await this.uow.run(async (tx): Promise<Claimed> => {
        const claim = await this.repository.claimPair(tx, now, this.owner, this.config.OUTBOX_LEASE_MS, this.interval);
        if (!claim) return { kind: 'none', nextDueAt: await this.repository.nextDue(tx, now) };
        if (!claim.entry) {
          // Due, but its head is backing off (or was cancelled): recompute and let go.
          await this.repository.releasePair(tx, claim.lease, this.interval);
          return { kind: 'released' };
        }
        const entry = claim.entry;
        const adapter = this.providers.get(entry.channel);
        const dispatchEntry = toDispatchEntry(entry);
        if (!adapter || adapter.needsRemotePreparation(dispatchEntry)) return { kind: 'claimed', lease: claim.lease, entry };
        const sender = await this.senders.credentialsFor(entry.sender_id, tx);
        if (!sender || sender.status !== 'connected') return { kind: 'claimed', lease: claim.lease, entry };
        let prepared: PreparedSend;
        try {
          prepared = await adapter.prepare(dispatchEntry, sender);
        } catch {
          // The two-phase path records the failure properly.
          return { kind: 'claimed', lease: claim.lease, entry };
        }
        const opened = await this.openAttempt(tx, claim.lease, entry, prepared);
        if (opened === 'suppressed') return { kind: 'suppressed', entry };
        return { kind: 'opened', lease: claim.lease, entry, opened, prepared, sender, adapter };
      });
    } catch (err) {
      if (err instanceof LeaseLost) return { claimed: true, attempted: false, nextDueAt: null, requeued: false };
      throw err;
    }
    switch (claimed.kind) {
      case 'none':
        if (claimed.nextDueAt && claimed.nextDueAt.getTime() > now.getTime()) this.metrics.pacingWaits.inc();
        return { claimed: false, attempted: false, nextDueAt: claimed.nextDueAt, requeued: false };
      case 'released':
        return { claimed: true, attempted: false, nextDueAt: null, requeued: false };
      case 'suppressed':
        this.noteSuppressed(claimed.entry);
        return { claimed: true, attempted: false, nextDueAt: null, requeued: false };
      case 'opened':
        return this.sendOpened(claimed.lease, claimed.entry, claimed.adapter, claimed.sender, claimed.prepared, claimed.opened);
      case 'claimed':
        return this.dispatch(claimed.lease, claimed.entry);
    }
  }

  /**
   * Opens the attempt (the pre-wire gate), or fails the entry when its recipient is suppressed.
   * @throws LeaseLost when the lease or the entry is no longer ours (the transaction must roll back)
   */
  private async openAttempt(tx: Tx, lease: PairLease, entry: EntryRow, prepared: PreparedSend): Promise<Opened | 'suppressed'> {
    const now = this.clock.now();
    const result = await this.repository.openAttempt(tx, {
      lease,
      entryId: entry.id,
      organizationId: entry.organization_id,
      channel: entry.channel,
      pacingKey: entry.pacing_key,
      now,
      intervalMs: this.interval,
      prepared: prepared.derived,
    });
    if (result.suppressed) {
      // The do-not-contact gate sits next to the wire: the entry fails without an attempt.
      const row = await this.repository.transitionClaimed(tx, entry.id, lease.fence, failure('suppressed', 'suppressed', 'the recipient is on the suppression list', null), now);
      if (!row) throw new LeaseLost();
      await tx.publish(entryEvent(OutboxEvents.EntryFailed, row));
      await this.repository.releasePair(tx, lease, this.interval);
      return 'suppressed';
    }
    if (result.attemptId === null || result.attempts === null) throw new LeaseLost();
    return { attemptId: result.attemptId, attempts: result.attempts, startedAt: now };
  }

  private noteSuppressed(entry: EntryRow): void {
    this.metrics.sends.inc({ channel: entry.channel, outcome: 'failed', classification: 'suppressed' });
    this.logger.info({ event: 'outbox.suppressed', organization_id: entry.organization_id, entry_id: entry.id, ...entry.log_context }, 'recipient suppressed; not sent');
  }

  /** Two-phase path: prepare outside any transaction (media upload), then open the attempt. */
  private async dispatch(lease: PairLease, entry: EntryRow): Promise<StepResult> {
    const adapter = this.providers.get(entry.channel);
    let sender: SenderCredentials | null;
    try {
      sender = await this.senders.credentialsFor(entry.sender_id);
    } catch (err) {
      this.logger.warn({ event: 'outbox.sender_read_failed', entry_id: entry.id, err: (err as Error).message }, 'could not read the sender; requeued');
      await this.uow.run(async (tx) => {
        await this.repository.lockPair(tx, lease.pairId);
        await this.repository.requeueUnopened(tx, entry.id, lease.fence, this.clock.now(), new Date(this.clock.now().getTime() + SENDER_READ_RETRY_MS));
        await this.repository.releasePair(tx, lease, this.interval);
      });
      return { claimed: true, attempted: false, nextDueAt: null, requeued: true };
    }

    let prepared: PreparedSend;
    try {
      if (!adapter) throw new Error(`no adapter for channel ${entry.channel}`);
      if (!sender || sender.status !== 'connected') {
        const tokenInvalid = sender?.statusReason === TOKEN_INVALID;
        throw new SenderUnavailable(tokenInvalid ? 'the sender is disconnected: its access token expired or was revoked (Graph 190)' : sender ? 'the sender is disconnected' : 'the sender was removed', tokenInvalid);
      }
      prepared = await adapter.prepare(toDispatchEntry(entry), sender);
    } catch (err) {
      return this.preparationFailed(lease, entry, adapter, err);
    }

    let opened: Opened | 'suppressed' | 'lease_lost';
    try {
      opened = await this.uow.run(async (tx) => {
        await this.repository.lockPair(tx, lease.pairId);
        return this.openAttempt(tx, lease, entry, prepared);
      });
    } catch (err) {
      if (!(err instanceof LeaseLost)) throw err;
      opened = 'lease_lost';
    }
    if (opened === 'suppressed') {
      this.noteSuppressed(entry);
      return { claimed: true, attempted: false, nextDueAt: null, requeued: false };
    }
    if (opened === 'lease_lost') {
      // No attempt was opened, so nothing can have been sent: hand the entry back untouched.
      this.logger.warn({ event: 'outbox.lease_lost', entry_id: entry.id, pair_id: lease.pairId }, 'claim lost before the attempt opened; requeued');
      await this.uow.run((tx) => this.repository.requeueUnopened(tx, entry.id, lease.fence, this.clock.now(), this.clock.now()));
      return { claimed: true, attempted: false, nextDueAt: null, requeued: true };
    }
    return this.sendOpened(lease, entry, adapter!, sender!, prepared, opened);
  }

  /** The wire call, at once after the attempt committed, then its outcome. */
  private async sendOpened(lease: PairLease, entry: EntryRow, adapter: ProviderAdapter, sender: SenderCredentials, prepared: PreparedSend, opened: Opened): Promise<StepResult> {
    this.metrics.attempts.inc({ channel: entry.channel });
    if (opened.attempts === 1) this.metrics.enqueueToWire.observe({ channel: entry.channel }, Math.max(0, opened.startedAt.getTime() - new Date(entry.created_at).getTime()) / 1000);
    let result: { accepted: SendAccepted } | { error: unknown };
    try {
      result = { accepted: await adapter.send(prepared, sender, toDispatchEntry(entry)) };
    } catch (err) {
      result = { error: err };
    }
    return this.recordOutcome(lease, entry, adapter, opened.attemptId, opened.attempts, result);
  }

  /** Turns a send result into the attempt's end and the entry's transition, and writes them. */
  private async recordOutcome(lease: PairLease, entry: EntryRow, adapter: ProviderAdapter, attemptId: string, attempts: number, result: { accepted: SendAccepted } | { error: unknown }): Promise<StepResult> {
    const now = this.clock.now();
    let end: AttemptEnd;
    let transition: EntryTransition;
    let classified: Classified | null = null;
    if ('accepted' in result) {
      end = { outcome: 'accepted', classification: null, providerCode: null, httpStatus: result.accepted.httpStatus, retryAfterMs: null, body: result.accepted.body };
      transition = { status: 'accepted', providerMessageId: result.accepted.providerMessageId, classification: null, errorCode: null, errorMessage: null, httpStatus: result.accepted.httpStatus };
    } else {
      const err = result.error;
      const wire = err instanceof ProviderCallError ? err : null;
      classified = adapter.classify(wire ? wire.failure : { kind: 'local' });
      const body = wire ? wire.body : { source: 'local_execution', message: (err as Error)?.message ?? String(err) };
      const code = wire ? wire.errorCode : 'local_execution';
      const message = (err as Error)?.message ?? String(err);
      const retryAfterMs = wire?.failure.kind === 'http' ? wire.failure.retryAfterMs : null;
      const httpStatus = wire?.httpStatus ?? null;
      const extras = { errorSubcode: wire?.detail.subcode ?? null, errorDetails: wire?.detail.details ?? null };
      const canRetry = classified.action === 'retry' && attempts < entry.max_attempts;
      if (canRetry) {
        const delay = retryDelayMs({ baseMs: this.config.OUTBOX_BACKOFF_BASE_MS, capMs: this.config.OUTBOX_BACKOFF_CAP_MS }, attempts, classified.floorMs);
        end = { outcome: 'retry', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs, body };
        transition = { status: 'pending', nextAttemptAt: new Date(now.getTime() + delay), classification: classified.classification, errorCode: code, errorMessage: message, httpStatus, ...extras };
      } else if (classified.action === 'park_ambiguous' && entry.payload_type !== 'read_receipt') {
        end = { outcome: 'ambiguous', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs, body };
        transition = { status: 'ambiguous', classification: classified.classification, errorCode: code, errorMessage: message, httpStatus, ...extras };
      } else {
        // Permanent, attempts exhausted, or a read receipt: a read receipt has no value by the time a retry would run.
        end = { outcome: 'failed', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs, body };
        transition = { status: 'failed', classification: classified.classification, errorCode: code, errorMessage: message, httpStatus, ...extras };
      }
    }

    const write = () =>
      this.uow.run(async (tx) => {
        await this.repository.lockPair(tx, lease.pairId);
        let [finalEnd, finalTransition] = [end, transition];
        if (transition.status === 'ambiguous') {
          // A status webhook may have correlated this send while we waited: evidence beats "unknown".
          const evidence = (await this.repository.findById(tx, entry.id))?.evidence;
          const settled = evidence ? settleByEvidence(evidence, end) : null;
          if (settled) [finalEnd, finalTransition] = settled;
        }
        const row = await this.repository.settleAttempt(tx, attemptId, finalEnd, entry.id, lease.fence, finalTransition, now);
        if (!row) return undefined;
        await this.disconnectOnInvalidToken(tx, row);
        if (row.status === 'accepted') await tx.publish(entryEvent(OutboxEvents.EntryAccepted, row));
        else if (row.status === 'failed') await tx.publish(entryEvent(OutboxEvents.EntryFailed, row));
        else if (row.status === 'ambiguous') await tx.publish(entryEvent(OutboxEvents.EntryAmbiguous, row));
        await this.repository.releasePair(tx, lease, this.interval);
        return row;
      });

    let row: EntryRow | undefined;
    try {
      row = await write();
    } catch (first) {
      try {
        row = await write();
      } catch (second) {
        // The row stays `sending` until lease recovery parks it; the log is now the only record of the outcome.
        this.logger.error(
          {
            event: 'outbox.outcome_record_failed',
            organization_id: entry.organization_id,
            entry_id: entry.id,
            attempt_id: attemptId,
            outcome: end.outcome,
            error_code: end.providerCode,
            http_status: end.httpStatus,
            classification: end.classification,
            provider_message_id: transition.providerMessageId ?? null,
            err: (second as Error).message,
            first_err: (first as Error).message,
          },
          'could not record the outcome of a send',
        );
        return { claimed: true, attempted: true, nextDueAt: null, requeued: false };
      }
    }

    this.metrics.sends.inc({ channel: entry.channel, outcome: end.outcome, classification: end.classification ?? 'none' });
    if (row?.last_classification === 'sender_unauthorized') this.senders.forget(row.sender_id);
    if (!row) {
      this.logger.warn({ event: 'outbox.late_outcome', entry_id: entry.id, outcome: end.outcome }, 'the entry was recovered while on the wire');
      if (transition.status === 'accepted') {
        // Our own answer is the best correlation there is: settle the entry the recovery parked.
        await this.resolution.resolveByCorrelation({ entryId: entry.id, providerMessageId: transition.providerMessageId ?? null, status: 'sent', source: 'late_answer' });
      }
      return { claimed: true, attempted: true, nextDueAt: null, requeued: false };
    }
    this.logOutcome(row, classified);
    return { claimed: true, attempted: true, nextDueAt: null, requeued: row.status === 'pending' };
  }

  /**
   * A preparation failure has no attempt yet; one is opened only to requeue or fail the entry,
   * which also stamps the pacing gate, so a failing entry cannot spin faster than real sends.
   */
  private async preparationFailed(lease: PairLease, entry: EntryRow, adapter: ProviderAdapter | undefined, err: unknown): Promise<StepResult> {
    let classified: Classified;
    let body: unknown;
    let code: string | null;
    const message = (err as Error)?.message ?? String(err);
    if (err instanceof ProviderCallError && adapter) {
      classified = adapter.classify(err.failure);
      // An upload that timed out sent no message: retrying it cannot duplicate one.
      if (classified.action === 'park_ambiguous') classified = { ...classified, classification: 'transient', action: 'retry' };
      body = err.body;
      code = err.errorCode;
    } else if (err instanceof SenderUnavailable) {
      classified = { classification: err.tokenInvalid ? 'sender_unauthorized' : 'sender_unavailable', action: 'fail', floorMs: 0, accountRestricted: false };
      body = { source: 'sender', message };
      code = err.tokenInvalid ? 'sender_token_invalid' : 'sender_unavailable';
    } else {
      classified = { classification: 'local_execution', action: 'fail', floorMs: 0, accountRestricted: false };
      body = { source: 'local_execution', message };
      code = 'local_execution';
    }
    const httpStatus = err instanceof ProviderCallError ? err.httpStatus : null;
    const row = await this.uow
      .run(async (tx) => {
        const now = this.clock.now();
        await this.repository.lockPair(tx, lease.pairId);
        if (!(await this.repository.stampPacingGate(tx, lease, now, this.interval))) throw new LeaseLost();
        const attempts = await this.repository.bumpAttempt(tx, entry.id, lease.fence, now, null);
        if (attempts === null) throw new LeaseLost();
        const retry = classified.action === 'retry' && attempts < entry.max_attempts;
        const end: AttemptEnd = { outcome: retry ? 'requeued' : 'failed', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs: null, body };
        await this.repository.insertAttempt(tx, entry.id, lease, attempts, now, end);
        const delay = retryDelayMs({ baseMs: this.config.OUTBOX_BACKOFF_BASE_MS, capMs: this.config.OUTBOX_BACKOFF_CAP_MS }, attempts, classified.floorMs);
        const next = await this.repository.transitionClaimed(
          tx,
          entry.id,
          lease.fence,
          retry
            ? { status: 'pending', nextAttemptAt: new Date(now.getTime() + delay), classification: classified.classification, errorCode: code, errorMessage: message, httpStatus }
            : { ...failure(classified.classification, code, message, httpStatus), errorSubcode: err instanceof ProviderCallError ? (err.detail.subcode ?? null) : null, errorDetails: err instanceof ProviderCallError ? (err.detail.details ?? null) : null },
          now,
        );
        if (!next) throw new LeaseLost();
        if (err instanceof ProviderCallError) await this.disconnectOnInvalidToken(tx, next);
        if (next.status === 'failed') await tx.publish(entryEvent(OutboxEvents.EntryFailed, next));
        await this.repository.releasePair(tx, lease, this.interval);
        return next;
      })
      .catch((e) => {
        if (e instanceof LeaseLost) return undefined;
        throw e;
      });
    if (!row) return { claimed: true, attempted: false, nextDueAt: null, requeued: false };
    this.metrics.sends.inc({ channel: entry.channel, outcome: row.status === 'pending' ? 'requeued' : 'failed', classification: classified.classification });
    this.logOutcome(row, classified);
    return { claimed: true, attempted: false, nextDueAt: null, requeued: row.status === 'pending' };
  }

  /**
   * Graph answered 190 for this entry: the token is dead for every entry of the sender, so the
   * sender is disconnected in the same transaction instead of failing its queue one call at a time.
   */
  private async disconnectOnInvalidToken(tx: Tx, row: EntryRow): Promise<void> {
    if (row.last_classification !== 'sender_unauthorized' || row.last_error_code !== '190') return;
    if (await this.senders.disconnectForInvalidToken(tx, row.sender_id, { code: row.last_error_code, subcode: row.last_error_subcode ?? null })) {
      this.logger.error({ event: 'outbox.sender_token_invalid', organization_id: row.organization_id, sender_id: row.sender_id, entry_id: row.id, error_subcode: row.last_error_subcode ?? null }, 'Graph refused the access token; the sender is disconnected');
    }
  }

  private logOutcome(row: EntryRow, classified: Classified | null): void {
    const fields = {
      organization_id: row.organization_id,
      entry_id: row.id,
      idempotency_key: row.idempotency_key,
      attempts: row.attempts,
      classification: row.last_classification,
      error_code: row.last_error_code,
      http_status: row.last_http_status,
      ...row.log_context,
    };
    if (classified?.accountRestricted) {
      this.logger.error({ event: 'outbox.whatsapp_account_restricted', sender_id: row.sender_id, ...fields }, 'WhatsApp restricted the business account');
    }
    if (row.status === 'failed') this.logger.warn({ event: 'outbox.delivery_failed', ...fields }, 'queued message could not be delivered');
    else if (row.status === 'ambiguous') this.logger.warn({ event: 'outbox.send_ambiguous', ...fields }, 'send outcome unknown; parked for correlation');
    else if (row.status === 'pending') this.logger.info({ event: 'outbox.send_retry', next_attempt_at: row.next_attempt_at, ...fields }, 'send failed; retry scheduled');
  }
}
