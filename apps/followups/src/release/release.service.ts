import { Inject, Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { type ContactActivity, ContactsRepository } from '../contacts/contacts.repository.js';
import type { FollowupsConfig } from '../followups.config.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { AiStepLease } from './ai-step-lease.js';
import { NodeInterpreter } from './node-interpreter.js';
import type { AiAnswer, AiRequest, PendingWrites, ReleaseOutcome } from './release-context.js';
import { type ClaimedRow, DUE_STATUS_LIST, ReleaseRepository, type StepWrite } from './release.repository.js';
import { failureBackoffMs } from './step-rules.js';

export type { ReleaseOutcome } from './release-context.js';

/** A busy contact is retried this much later, ms (seed 000 "busy → retry in 2 s"). */
export const CONTACT_BUSY_RETRY_MS = 2000;

/** Most moments `takeNextDue` keeps (ours: numbers deferred at once in one process; a dropped one waits a poll). */
const NEXT_DUE_KEPT = 256;

/** The error of a step whose effects were already recorded: another release got there first. */
function alreadyReleased(write: StepWrite): Error {
  const effect = write.effects[0];
  return new Error(`step ${effect?.nodeId}#${effect?.step} of enrollment ${write.state.id} was already released`);
}

/**
 * The release loop's unit of work (seed 000 "Release (one step, one transaction)", adapted to the
 * graph): claim the oldest due enrollment, take its contact without waiting, run its step
 * (NodeInterpreter: the checks, then nodes until the enrollment waits, finishes, is deferred, or
 * has queued one send), write it — all in one transaction, so a crash at any line leaves the
 * enrollment exactly as it was. This class is the transaction (claim, batch, write, commit, the
 * failure backoff); the step's rules are the interpreter's, the send's rules SendGate's, and the AI
 * step's lease and fence AiStepLease's.
 */
@Injectable()
export class ReleaseService {
  /** Future `next_run_at` moments (epoch ms, ascending, distinct) of steps this process committed that no idle worker has taken yet. */
  private readonly nextDue: number[] = [];

  constructor(
    private readonly uow: UnitOfWork,
    private readonly release: ReleaseRepository,
    private readonly contacts: ContactsRepository,
    private readonly interpreter: NodeInterpreter,
    private readonly lease: AiStepLease,
    private readonly metrics: FollowupsMetrics,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Releases at most one due step. An AI step takes two transactions around its model call (seed
   * 000 "AI step"): the first pass leases the enrollment (`locked_until`, `next_run_at` moved
   * there) and bumps `ai_attempts`, then commits; the model is called with no lock held; the
   * second pass claims the same enrollment only while `ai_attempts`, node and visit are unchanged,
   * re-runs every check under the lock and uses the answer. A worker that died mid-call leaves a
   * lease that expires: another release runs the step with a new fence, and a late answer finds
   * the fence moved and is dropped.
   */
  async releaseOne(): Promise<ReleaseOutcome> {
    const first = await this.pass();
    if (!first.aiRequest) return first.outcome;
    return this.answerAi(first.aiRequest);
  }

  /**
   * Releases up to `limit` due steps of different enrollments in one transaction (group commit):
   * one claim statement, then each claimed enrollment runs exactly as in `releaseOne` — its checks,
   * its nodes, one write of its step — and one outbox insert and one commit serve them all. Each
   * enrollment still moves at most one step per transaction (seed 000 "Release (one step, one
   * transaction)"), and a step is written whole or not at all: if one enrollment's step throws,
   * the whole batch rolls back, that enrollment alone records the failure and backs off, and the
   * others stay due for the next claim. An error that belongs to no single step (the outbox insert,
   * the commit) is thrown: the caller releases one at a time for a while (see ReleaseLoop).
   * AI steps leave their model calls for after the commit, as in `releaseOne`.
   * @returns how many enrollments were claimed (0: nothing is due)
   */
  async releaseBatch(limit: number): Promise<number> {
    const now = this.clock.now();
    let current: { id: string; revision: number; organization_id: string } | undefined;
    const outcomes: ReleaseOutcome[] = [];
    const aiRequests: AiRequest[] = [];
    let committedWrites: StepWrite[] = [];
    let claimedCount = 0;
    try {
      await this.uow.run(async (tx) => {
        const rows = await this.release.claimDueBatch(tx, now, limit);
        claimedCount = rows.length;
        const pending: PendingWrites = { writes: [], messages: [] };
        // Sends queued earlier in this batch count against the per-contact cap of the later rows.
        const batchSends = new Map<string, number>();
        // Rows of one contact share one contact object, so a tag step's change is what a later
        // row of that contact checks its consent against.
        const contacts = new Map<string, ContactActivity>();
        for (const row of rows) {
          current = { id: row.id, revision: row.revision, organization_id: row.organization_id };
          const earlier = batchSends.get(row.contact_id) ?? 0;
          const recentSends = earlier ? { count: row.recentSends.count + earlier, oldest: row.recentSends.oldest ?? now } : row.recentSends;
          const contactKey = `${row.organization_id}:${row.contact_id}`;
          let contact = row.contact;
          if (contact) {
            contact = contacts.get(contactKey) ?? contact;
            contacts.set(contactKey, contact);
          }
          const result = await this.releaseClaimed(tx, now, { ...row, contact, recentSends }, pending);
          if (result.sent) batchSends.set(row.contact_id, earlier + 1);
          if (result.aiRequest) aiRequests.push(result.aiRequest);
          outcomes.push(result.outcome);
        }
        // One write for every step, then one outbox insert: a failure here is the batch's, not a row's.
        current = undefined;
        const again = await this.writePending(tx, pending, now);
        if (again) {
          const row = rows.find((r) => r.id === again.state.id)!;
          current = { id: row.id, revision: row.revision, organization_id: row.organization_id };
          throw alreadyReleased(again);
        }
        committedWrites = pending.writes;
      });
    } catch (err) {
      if (!current) throw err;
      this.metrics.releases.inc({ outcome: 'failed' });
      await this.recordFailure(current, err, now);
      return claimedCount;
    }
    for (const outcome of outcomes) this.metrics.releases.inc({ outcome });
    this.noteNextDue(committedWrites);
    await Promise.all(aiRequests.map((request) => this.answerAi(request)));
    return claimedCount;
  }

  /**
   * The soonest moment a step this process committed is due again, epoch ms, when it is later than
   * now and sooner than `horizonMs` from now (a number's pacing defers its next send by
   * FOLLOWUP_SENDER_GAP_MS, 250 ms by default: an idle worker that only polled every second would
   * send a number's queue at 1/s instead of its pace). The first idle worker to ask takes it; the
   * next takes the moment after it. Null when there is none: the worker polls.
   */
  takeNextDue(horizonMs: number): number | null {
    const now = this.clock.now().getTime();
    // Moments already past were claimable by the claim that just came back empty: another worker has them.
    while (this.nextDue.length && this.nextDue[0]! <= now) this.nextDue.shift();
    const due = this.nextDue[0];
    if (due === undefined || due - now >= horizonMs) return null;
    this.nextDue.shift();
    return due;
  }

  /** Milliseconds from now (the clock the claims use) until `at` (epoch ms); negative once past. */
  msUntil(at: number): number {
    return at - this.clock.now().getTime();
  }

  /** Gives back a moment taken by `takeNextDue` that its worker could not wait for (it was woken for other work first). */
  returnNextDue(at: number): void {
    const i = this.nextDue.findIndex((t) => t >= at);
    if (i === -1) this.nextDue.push(at);
    else if (this.nextDue[i] !== at) this.nextDue.splice(i, 0, at);
    // The latest moments go first: each is at most a poll late without its hint.
    if (this.nextDue.length > NEXT_DUE_KEPT) this.nextDue.length = NEXT_DUE_KEPT;
  }

  /** Keeps the `next_run_at` of committed steps the claim will pick up again within a poll (see `takeNextDue`; later ones the poll finds). */
  private noteNextDue(writes: readonly StepWrite[]): void {
    const now = this.clock.now().getTime();
    const horizon = now + this.config.FOLLOWUP_POLL_MS;
    for (const w of writes) {
      const at = (DUE_STATUS_LIST as readonly string[]).includes(w.state.status) ? w.state.next_run_at?.getTime() : undefined;
      if (at !== undefined && at > now && at < horizon) this.returnNextDue(at);
    }
  }

  /** The model call of an AI step's first pass, made with no lock held, then the fenced second pass. */
  private async answerAi(request: AiRequest): Promise<ReleaseOutcome> {
    const second = await this.pass(await this.lease.ask(request));
    return second.outcome;
  }

  /**
   * Releases at most one due step. An unexpected error rolls the transaction back and backs the
   * enrollment off (30 s … 1 h), marking it `dead` after FOLLOWUP_MAX_FAILURES.
   */
  private async pass(answer?: AiAnswer): Promise<{ outcome: ReleaseOutcome; aiRequest?: AiRequest }> {
    const now = this.clock.now();
    let claimed: { id: string; revision: number; organization_id: string } | undefined;
    let aiRequest: AiRequest | undefined;
    let committedWrites: StepWrite[] = [];
    try {
      const outcome = await this.uow.run(async (tx) => {
        const claimedRow = await this.release.claimDue(tx, now, answer && this.lease.fenceOf(answer));
        if (!claimedRow && answer) {
          // Another release took the step over with a new fence (our lease ran out), or it moved on.
          this.lease.dropped(answer);
          return 'dropped' as const;
        }
        if (!claimedRow) return 'idle' as const;
        claimed = { id: claimedRow.id, revision: claimedRow.revision, organization_id: claimedRow.organization_id };
        const pending: PendingWrites = { writes: [], messages: [] };
        const result = await this.releaseClaimed(tx, now, claimedRow, pending, answer);
        const again = await this.writePending(tx, pending, now);
        if (again) throw alreadyReleased(again);
        aiRequest = result.aiRequest;
        committedWrites = pending.writes;
        return result.outcome;
      });
      this.metrics.releases.inc({ outcome });
      this.noteNextDue(committedWrites);
      return { outcome, aiRequest };
    } catch (err) {
      this.metrics.releases.inc({ outcome: 'failed' });
      if (!claimed) throw err;
      await this.recordFailure(claimed, err, now);
      return { outcome: 'failed' };
    }
  }

  /**
   * One claimed enrollment inside the release transaction: a busy contact or a flow row being
   * changed defers it 2 s; otherwise its step runs. What the step writes and publishes goes to
   * `pending`, for the caller to write once per transaction (`writePending`).
   */
  private async releaseClaimed(tx: Tx, now: Date, claimedRow: ClaimedRow, pending: PendingWrites, answer?: AiAnswer): Promise<{ outcome: 'released' | 'busy'; sent: boolean; aiRequest?: AiRequest }> {
    const { contact, recentSends, ...row } = claimedRow;
    this.metrics.releaseLag.observe(Math.max(0, (now.getTime() - (row.next_run_at?.getTime() ?? now.getTime())) / 1000));
    if (!contact) {
      // A stop path holds the contact (or the row is missing): never wait, come back in 2 s.
      await this.contacts.ensure(tx, row.organization_id, row.contact_id);
      await this.release.deferOnly(tx, row.id, new Date(now.getTime() + CONTACT_BUSY_RETRY_MS));
      return { outcome: 'busy', sent: false };
    }
    let { flow_status: flowStatus, ...state } = row;
    if (flowStatus !== 'active') {
      const locked = await this.release.lockFlowStatus(tx, row.flow_id);
      if (!locked) {
        await this.release.deferOnly(tx, row.id, new Date(now.getTime() + CONTACT_BUSY_RETRY_MS));
        return { outcome: 'busy', sent: false };
      }
      flowStatus = locked;
    }
    const stepped = await this.interpreter.step(tx, now, state, contact, flowStatus, recentSends, pending, answer);
    return { outcome: 'released', sent: stepped.sent, aiRequest: stepped.aiRequest };
  }

  /**
   * Writes the pending steps (one statement) and inserts their messages into the outbox.
   * @returns a step whose effects were already recorded (released before: the caller throws), or undefined
   */
  private async writePending(tx: Tx, pending: PendingWrites, now: Date): Promise<StepWrite | undefined> {
    if (pending.writes.length) {
      const inserted = await this.release.writeSteps(tx, pending.writes, now);
      // Unique per (enrollment, node, visit, kind): fewer rows means this step was already released.
      const again = pending.writes.find((w) => (inserted.get(w.state.id) ?? 0) < w.effects.length);
      if (again) return again;
    }
    if (pending.messages.length) await tx.publish(pending.messages);
    return undefined;
  }

  private async recordFailure(claimed: { id: string; revision: number; organization_id: string }, err: unknown, now: Date): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    const result = await this.uow.run((tx) => this.release.recordFailure(tx, claimed.id, claimed.revision, message, failureBackoffMs, this.config.FOLLOWUP_MAX_FAILURES, now));
    this.logger.warn({ event: 'followups.release_failed', organization_id: claimed.organization_id, enrollment_id: claimed.id, err: message, failures: result?.failures, status: result?.status }, 'release failed; backing off');
    if (result?.status === 'dead') this.metrics.finished.inc({ status: 'dead', reason: 'too_many_failures' });
  }
}
