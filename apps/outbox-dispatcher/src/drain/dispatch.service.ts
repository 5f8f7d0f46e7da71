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
import { preparationFailure, SenderUnavailable, sendOutcome } from './send-outcome.js';
import { failure, settleByEvidence } from './settle-helpers.js';
import type { Tx } from '@touchpoint/database';
import { type AttemptEnd, AttemptsRepository, type EntryTransition } from './attempts.repository.js';
import { type EntryRow, OutboxRepository } from './outbox.repository.js';
import { type PairLease, PairLeaseRepository } from './pair-lease.repository.js';

/** What one drain step did (one claim and the work of its pairs). */
export interface StepResult {
  /** Pairs claimed (work may follow at once when as many as asked). */
  claims: number;
  /** Attempts opened. */
  attempted: number;
  /** When fewer pairs than asked were claimed: the earliest time a pair becomes workable (null = nothing pending). */
  nextDueAt: Date | null;
  /** An entry was requeued for later: the caller owes a wake-up at `nextDueAt` of its pair. */
  requeued: boolean;
}

/** What the work of one claimed pair did. */
export interface PairWork {
  attempted: boolean;
  requeued: boolean;
}

/** A claim: how many pairs it took, the work on them (already running), and the next due time when it took fewer than asked. */
export interface ClaimedBatch {
  claims: number;
  work: Promise<PairWork>[];
  nextDueAt: Date | null;
}

/** Most outcomes written by one settle transaction (bounds its locks and its statement). */
const SETTLE_BATCH_MAX = 100;

/** Retry of a failed sender read (database blip), ms. */
const SENDER_READ_RETRY_MS = 5000;

/**
 * When an entry whose recipient was being suppressed at its gate is tried again, ms after (ours):
 * an add holds (or waits for) the recipient's lock until its transaction ends, a few ms for the
 * RPC, at most its batch's lock timeout for a bus handler; then the entry is either cancelled by
 * it or refused by the next gate.
 */
export const RECIPIENT_BUSY_RETRY_MS = 100;

/**
 * Added to a pair's pacing stamp when a request left (see `DispatchService.sendOpened`), ms: the
 * time from handing a request to the provider's HTTP client to the provider taking it differs
 * from one request to the next (the sending process's and the receiving server's event loops, the
 * network), so two requests that left `WHATSAPP_PAIR_MIN_SEND_INTERVAL_MS` apart can arrive a
 * little closer. The chaos run on this 2-core machine under load saw arrivals up to 15 ms closer
 * than the departures; 250 ms covers stalls an order of magnitude longer, at a cost of 4% of a
 * pair's throughput. The interval itself is the seed's; this margin is ours and only ever adds.
 */
export const PAIR_WIRE_MARGIN_MS = 250;

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

/** An outcome waiting for the next batched settle. */
interface QueuedSettle {
  lease: PairLease;
  attemptId: string;
  entryId: string;
  /** When the request was handed to the provider's client: the pair's pacing stamp moves up to it. */
  wireStartedAt: Date;
  end: AttemptEnd;
  transition: EntryTransition;
  now: Date;
  done: (row: EntryRow | undefined) => void;
  failed: (err: unknown) => void;
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
    private readonly pairs: PairLeaseRepository,
    private readonly attempts: AttemptsRepository,
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

  /** Outcomes waiting for the settle transaction in flight to finish. */
  private settleQueue: QueuedSettle[] = [];
  private settling = false;
  /** Told the new due time of every pair this process released (the drain's timers use it). */
  onPairsDue: (at: Date) => void = () => undefined;

  /** Claims up to `limit` due pairs, works their FIFO heads, and waits for all of it. */
  async step(limit = this.config.OUTBOX_CLAIM_BATCH): Promise<StepResult> {
    const batch = await this.claim(limit);
    const done = await Promise.all(batch.work);
    return { claims: batch.claims, attempted: done.filter((d) => d.attempted).length, nextDueAt: batch.nextDueAt, requeued: done.some((d) => d.requeued) };
  }

  /**
   * Claims up to `limit` due pairs and starts the work on their FIFO heads (returned as running
   * promises, which never reject). Heads whose preparation needs no provider call (no media
   * upload) are prepared and their attempts opened in the claim's own transaction, all in one
   * statement: one commit for the whole batch, and nothing variable-length runs under the locks.
   * The rest take the two-phase path. `nextDueAt` is read in the same transaction when fewer
   * pairs than asked were claimable.
   */
  async claim(limit: number): Promise<ClaimedBatch> {
    const now = this.clock.now();
    type Ready = { lease: PairLease; entry: EntryRow; prepared: PreparedSend; sender: SenderCredentials; adapter: ProviderAdapter };
    type Opened_ = Ready & { opened: Opened };
    const claimed = await this.uow.run(async (tx) => {
      const claims = await this.pairs.claimPairs(tx, now, this.owner, this.config.OUTBOX_LEASE_MS, this.interval, limit);
      const nextDueAt = claims.length < limit ? await this.pairs.nextDue(tx, now) : null;
      const release: PairLease[] = [];
      const twoPhase: { lease: PairLease; entry: EntryRow }[] = [];
      const ready: Ready[] = [];
      for (const { lease, entry, recipientHeld } of claims) {
        // Due, but its head is backing off (or was cancelled): recompute and let go.
        if (!entry) {
          release.push(lease);
          continue;
        }
        if (recipientHeld === false) {
          // Its recipient is being suppressed this instant: hand it back untouched, soon due again.
          await this.attempts.requeueUnopened(tx, entry.id, lease.fence, now, new Date(now.getTime() + RECIPIENT_BUSY_RETRY_MS));
          release.push(lease);
          continue;
        }
        const adapter = this.providers.get(entry.channel);
        const dispatchEntry = toDispatchEntry(entry);
        if (!adapter || adapter.needsRemotePreparation(dispatchEntry)) {
          twoPhase.push({ lease, entry });
          continue;
        }
        const sender = await this.senders.credentialsFor(entry.sender_id, tx);
        if (!sender || sender.status !== 'connected') {
          twoPhase.push({ lease, entry });
          continue;
        }
        try {
          ready.push({ lease, entry, adapter, sender, prepared: await adapter.prepare(dispatchEntry, sender) });
        } catch {
          // The two-phase path records the failure properly.
          twoPhase.push({ lease, entry });
        }
      }
      const openedAt = this.clock.now();
      const results = await this.attempts.openAttempts(
        tx,
        ready.map((r) => ({ lease: r.lease, entryId: r.entry.id, organizationId: r.entry.organization_id, channel: r.entry.channel, pacingKey: r.entry.pacing_key, prepared: r.prepared.derived })),
        openedAt,
        this.interval,
        { recipientsHeld: true },
      );
      const opened: Opened_[] = [];
      const suppressed: EntryRow[] = [];
      for (const r of ready) {
        const result = results.get(r.entry.id);
        if (result?.suppressed) {
          // The do-not-contact gate sits next to the wire: the entry fails without an attempt.
          const row = await this.attempts.transitionClaimed(tx, r.entry.id, r.lease.fence, failure('suppressed', 'suppressed', 'the recipient is on the suppression list', null), openedAt);
          if (row) {
            await tx.publish(entryEvent(OutboxEvents.EntryFailed, row));
            suppressed.push(r.entry);
          }
          release.push(r.lease);
        } else if (!result || result.attemptId === null || result.attempts === null) {
          // Lost inside our own claim (cannot normally happen): no attempt, so nothing was sent; hand it back as it was.
          await this.attempts.requeueUnopened(tx, r.entry.id, r.lease.fence, openedAt, new Date(r.entry.next_attempt_at));
          release.push(r.lease);
        } else {
          opened.push({ ...r, opened: { attemptId: result.attemptId, attempts: result.attempts, startedAt: openedAt } });
        }
      }
      const dues = await this.pairs.releasePairs(tx, release, this.interval);
      return { claims: claims.length, nextDueAt, opened, twoPhase, suppressed, dues };
    });
    this.notePairsDue(claimed.dues);
    if (claimed.claims === 0 && claimed.nextDueAt && claimed.nextDueAt.getTime() > now.getTime()) this.metrics.pacingWaits.inc();
    for (const entry of claimed.suppressed) this.noteSuppressed(entry);
    const work: Promise<PairWork>[] = [...claimed.opened.map((o) => this.guard(o.entry, () => this.sendOpened(o.lease, o.entry, o.adapter, o.sender, o.prepared, o.opened))), ...claimed.twoPhase.map((c) => this.guard(c.entry, () => this.dispatch(c.lease, c.entry)))];
    return { claims: claimed.claims, work, nextDueAt: claimed.nextDueAt };
  }

  /** Runs the work of one claimed pair; an unexpected error is logged (lease recovery settles the entry). */
  private async guard(entry: EntryRow, work: () => Promise<PairWork>): Promise<PairWork> {
    try {
      return await work();
    } catch (err) {
      this.logger.error({ event: 'outbox.drain_failed', organization_id: entry.organization_id, entry_id: entry.id, err: (err as Error).message }, 'drain step failed');
      return { attempted: false, requeued: false };
    }
  }

  private notePairsDue(dues: (Date | null)[]): void {
    let earliest: Date | null = null;
    for (const at of dues) if (at && (!earliest || at < earliest)) earliest = at;
    if (earliest) this.onPairsDue(earliest);
  }

  /**
   * Opens the attempt (the pre-wire gate), or fails the entry when its recipient is suppressed.
   * @throws LeaseLost when the lease or the entry is no longer ours (the transaction must roll back)
   */
  private async openAttempt(tx: Tx, lease: PairLease, entry: EntryRow, prepared: PreparedSend): Promise<Opened | 'suppressed' | 'busy'> {
    const now = this.clock.now();
    const result = await this.attempts.openAttempt(tx, {
      lease,
      entryId: entry.id,
      organizationId: entry.organization_id,
      channel: entry.channel,
      pacingKey: entry.pacing_key,
      now,
      intervalMs: this.interval,
      prepared: prepared.derived,
    });
    if (result.busy) {
      // As in `claim`: its recipient is being suppressed this instant; handed back, soon due again.
      if (!(await this.attempts.requeueUnopened(tx, entry.id, lease.fence, now, new Date(now.getTime() + RECIPIENT_BUSY_RETRY_MS)))) throw new LeaseLost();
      this.notePairsDue([await this.pairs.releasePair(tx, lease, this.interval)]);
      return 'busy';
    }
    if (result.suppressed) {
      // The do-not-contact gate sits next to the wire: the entry fails without an attempt.
      const row = await this.attempts.transitionClaimed(tx, entry.id, lease.fence, failure('suppressed', 'suppressed', 'the recipient is on the suppression list', null), now);
      if (!row) throw new LeaseLost();
      await tx.publish(entryEvent(OutboxEvents.EntryFailed, row));
      await this.pairs.releasePair(tx, lease, this.interval);
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
  private async dispatch(lease: PairLease, entry: EntryRow): Promise<PairWork> {
    const adapter = this.providers.get(entry.channel);
    let sender: SenderCredentials | null;
    try {
      sender = await this.senders.credentialsFor(entry.sender_id);
    } catch (err) {
      this.logger.warn({ event: 'outbox.sender_read_failed', entry_id: entry.id, err: (err as Error).message }, 'could not read the sender; requeued');
      await this.uow.run(async (tx) => {
        await this.pairs.lockPair(tx, lease.pairId);
        await this.attempts.requeueUnopened(tx, entry.id, lease.fence, this.clock.now(), new Date(this.clock.now().getTime() + SENDER_READ_RETRY_MS));
        this.notePairsDue([await this.pairs.releasePair(tx, lease, this.interval)]);
      });
      return { attempted: false, requeued: true };
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

    let opened: Opened | 'suppressed' | 'busy' | 'lease_lost';
    try {
      opened = await this.uow.run(async (tx) => {
        await this.pairs.lockPair(tx, lease.pairId);
        return this.openAttempt(tx, lease, entry, prepared);
      });
    } catch (err) {
      if (!(err instanceof LeaseLost)) throw err;
      opened = 'lease_lost';
    }
    if (opened === 'suppressed') {
      this.noteSuppressed(entry);
      return { attempted: false, requeued: false };
    }
    if (opened === 'busy') return { attempted: false, requeued: true };
    if (opened === 'lease_lost') {
      // No attempt was opened, so nothing can have been sent: hand the entry back untouched.
      this.logger.warn({ event: 'outbox.lease_lost', entry_id: entry.id, pair_id: lease.pairId }, 'claim lost before the attempt opened; requeued');
      await this.uow.run((tx) => this.attempts.requeueUnopened(tx, entry.id, lease.fence, this.clock.now(), this.clock.now()));
      return { attempted: false, requeued: true };
    }
    return this.sendOpened(lease, entry, adapter!, sender!, prepared, opened);
  }

  /**
   * The wire call, at once after the attempt committed, then its outcome. The pacing stamp the
   * attempt's opening wrote is when the attempt was opened, inside a transaction that had yet to
   * commit (with a batched claim, before the other heads of the batch were handed over too); the
   * request leaves later by a variable delay. So the time read right before the request is handed
   * to the provider's client is kept (`wireStartedAt`) and the settle moves the pair's stamp up to
   * it, plus `PAIR_WIRE_MARGIN_MS`, before it releases the pair: the next attempt on the pair is
   * paced from this one's actual start (seed 004 "measured at attempt start"), whatever the
   * claim-to-wire delay was. A crash before the settle leaves the opening's stamp; the pair then
   * waits for its lease to expire (`OUTBOX_LEASE_MS`, far longer than the interval).
   */
  private async sendOpened(lease: PairLease, entry: EntryRow, adapter: ProviderAdapter, sender: SenderCredentials, prepared: PreparedSend, opened: Opened): Promise<PairWork> {
    this.metrics.attempts.inc({ channel: entry.channel });
    if (opened.attempts === 1) this.metrics.enqueueToWire.observe({ channel: entry.channel }, Math.max(0, opened.startedAt.getTime() - new Date(entry.created_at).getTime()) / 1000);
    let result: { accepted: SendAccepted } | { error: unknown };
    const wireStartedAt = this.clock.now();
    try {
      result = { accepted: await adapter.send(prepared, sender, toDispatchEntry(entry)) };
    } catch (err) {
      result = { error: err };
    }
    return this.recordOutcome(lease, entry, adapter, opened.attemptId, opened.attempts, result, wireStartedAt);
  }

  /**
   * Turns a send result into the attempt's end and the entry's transition, and writes them, with
   * the pair's pacing stamp moved up to `wireStartedAt` (see `sendOpened`).
   */
  private async recordOutcome(lease: PairLease, entry: EntryRow, adapter: ProviderAdapter, attemptId: string, attempts: number, result: { accepted: SendAccepted } | { error: unknown }, wireStartedAt: Date): Promise<PairWork> {
    const now = this.clock.now();
    const { end, transition, classified } = sendOutcome(entry, adapter, attempts, result, now, { baseMs: this.config.OUTBOX_BACKOFF_BASE_MS, capMs: this.config.OUTBOX_BACKOFF_CAP_MS });

    // The plain outcomes ride the batched settle; ambiguous ones (an evidence read first) and a
    // token refusal (the sender is disconnected too) are written on their own.
    const plain = transition.status !== 'ambiguous' && !(transition.classification === 'sender_unauthorized' && transition.errorCode === '190');
    const writeAlone = () =>
      this.uow.run(async (tx) => {
        await this.pairs.lockPair(tx, lease.pairId);
        await this.pairs.stampWireStarts(tx, [{ pairId: lease.pairId, at: wireStartedAt }], PAIR_WIRE_MARGIN_MS);
        let [finalEnd, finalTransition] = [end, transition];
        if (transition.status === 'ambiguous') {
          // A status webhook may have correlated this send while we waited: evidence beats "unknown".
          const evidence = (await this.repository.findById(tx, entry.id))?.evidence;
          const settled = evidence ? settleByEvidence(evidence, end) : null;
          if (settled) [finalEnd, finalTransition] = settled;
        }
        const row = await this.attempts.settleAttempt(tx, attemptId, finalEnd, entry.id, lease.fence, finalTransition, now);
        if (!row) return undefined;
        await this.disconnectOnInvalidToken(tx, row);
        if (row.status === 'accepted') await tx.publish(entryEvent(OutboxEvents.EntryAccepted, row));
        else if (row.status === 'failed') await tx.publish(entryEvent(OutboxEvents.EntryFailed, row));
        else if (row.status === 'ambiguous') await tx.publish(entryEvent(OutboxEvents.EntryAmbiguous, row));
        this.notePairsDue([await this.pairs.releasePair(tx, lease, this.interval)]);
        return row;
      });

    let row: EntryRow | undefined;
    try {
      row = plain ? await this.settleBatched({ lease, attemptId, entryId: entry.id, wireStartedAt, end, transition, now }) : await writeAlone();
    } catch (first) {
      try {
        // Alone, so one bad row cannot fail a batch twice.
        row = await writeAlone();
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
        return { attempted: true, requeued: false };
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
      return { attempted: true, requeued: false };
    }
    this.logOutcome(row, classified);
    return { attempted: true, requeued: row.status === 'pending' };
  }

  /**
   * Queues a plain outcome for the next batched settle and resolves with its entry's row
   * (undefined when the entry was recovered while on the wire). Outcomes that arrive while a
   * settle transaction is in flight are written together by the next one (group commit).
   * @throws what the settle transaction threw (the caller writes the outcome alone then)
   */
  private settleBatched(item: Omit<QueuedSettle, 'done' | 'failed'>): Promise<EntryRow | undefined> {
    return new Promise((done, failed) => {
      this.settleQueue.push({ ...item, done, failed });
      if (!this.settling) void this.flushSettles();
    });
  }

  private async flushSettles(): Promise<void> {
    this.settling = true;
    try {
      while (this.settleQueue.length > 0) {
        const batch = this.settleQueue.splice(0, SETTLE_BATCH_MAX);
        try {
          const rows = await this.writeSettles(batch);
          for (const item of batch) item.done(rows.get(item.entryId));
        } catch (err) {
          for (const item of batch) item.failed(err);
        }
      }
    } finally {
      this.settling = false;
    }
  }

  /**
   * One transaction for a batch of outcomes: lock the pairs (first, so the release's recompute
   * sees every entry enqueued before), move their pacing stamps up to the wire starts, close the
   * attempts and move the entries in one statement, publish their events, release the pairs whose
   * entry was still ours.
   */
  private async writeSettles(batch: QueuedSettle[]): Promise<Map<string, EntryRow>> {
    const { rows, dues } = await this.uow.run(async (tx) => {
      await this.pairs.lockPairs(
        tx,
        batch.map((b) => b.lease.pairId),
      );
      await this.pairs.stampWireStarts(
        tx,
        batch.map((b) => ({ pairId: b.lease.pairId, at: b.wireStartedAt })),
        PAIR_WIRE_MARGIN_MS,
      );
      const settled = await this.attempts.settleAttempts(
        tx,
        batch.map((b) => ({ attemptId: b.attemptId, end: b.end, entryId: b.entryId, fence: b.lease.fence, transition: b.transition, now: b.now })),
      );
      const byId = new Map(settled.map((row) => [row.id, row]));
      const events = settled.flatMap((row) => (row.status === 'accepted' ? [entryEvent(OutboxEvents.EntryAccepted, row)] : row.status === 'failed' ? [entryEvent(OutboxEvents.EntryFailed, row)] : row.status === 'ambiguous' ? [entryEvent(OutboxEvents.EntryAmbiguous, row)] : []));
      await tx.publish(events);
      const released = await this.pairs.releasePairs(
        tx,
        batch.filter((b) => byId.has(b.entryId)).map((b) => b.lease),
        this.interval,
      );
      return { rows: byId, dues: released };
    });
    this.notePairsDue(dues);
    return rows;
  }

  /**
   * A preparation failure has no attempt yet; one is opened only to requeue or fail the entry,
   * which also stamps the pacing gate, so a failing entry cannot spin faster than real sends.
   */
  private async preparationFailed(lease: PairLease, entry: EntryRow, adapter: ProviderAdapter | undefined, err: unknown): Promise<PairWork> {
    const message = (err as Error)?.message ?? String(err);
    const { classified, body, code, httpStatus } = preparationFailure(err, adapter);
    const row = await this.uow
      .run(async (tx) => {
        const now = this.clock.now();
        await this.pairs.lockPair(tx, lease.pairId);
        if (!(await this.pairs.stampPacingGate(tx, lease, now, this.interval))) throw new LeaseLost();
        const attempts = await this.attempts.bumpAttempt(tx, entry.id, lease.fence, now, null);
        if (attempts === null) throw new LeaseLost();
        const retry = classified.action === 'retry' && attempts < entry.max_attempts;
        const end: AttemptEnd = { outcome: retry ? 'requeued' : 'failed', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs: null, body };
        await this.attempts.insertAttempt(tx, entry.id, lease, attempts, now, end);
        const delay = retryDelayMs({ baseMs: this.config.OUTBOX_BACKOFF_BASE_MS, capMs: this.config.OUTBOX_BACKOFF_CAP_MS }, attempts, classified.floorMs);
        const next = await this.attempts.transitionClaimed(
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
        this.notePairsDue([await this.pairs.releasePair(tx, lease, this.interval)]);
        return next;
      })
      .catch((e) => {
        if (e instanceof LeaseLost) return undefined;
        throw e;
      });
    if (!row) return { attempted: false, requeued: false };
    this.metrics.sends.inc({ channel: entry.channel, outcome: row.status === 'pending' ? 'requeued' : 'failed', classification: classified.classification });
    this.logOutcome(row, classified);
    return { attempted: false, requeued: row.status === 'pending' };
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
