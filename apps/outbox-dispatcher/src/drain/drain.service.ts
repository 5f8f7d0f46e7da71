import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { OnBusMessage } from '@touchpoint/bus';
import { quoteIdent } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, BusService, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { wakeChannelOf } from '../enqueue/enqueue.service.js';
import { type ClaimedBatch, DispatchService } from './dispatch.service.js';
import { PairLeaseRepository } from './pair-lease.repository.js';

/** Type of the self-addressed, delayed wake-up message (a hint; it skips the outbox). */
export const DISPATCH_WAKE = 'outbox.dispatch.wake';
/** Wake-ups further out than this are left to the timers and the sweep, ms (bounds the delay queues). */
const MAX_BUS_WAKE_DELAY_MS = 60_000;
/** Delay granularity of bus wake-ups, ms (fewer delay queues; a wake-up early by less is harmless). */
const BUS_WAKE_GRANULARITY_MS = 500;
/** Pause after an unexpected drain error before the claimer tries again, ms. */
const ERROR_PAUSE_MS = 1000;
/**
 * Shortest sleep of the claimer when it found fewer pairs than it asked for, ms: pairs that come
 * due within it are claimed together (a few ms against a 6,500 ms pacing interval).
 */
const MIN_IDLE_SLEEP_MS = 10;

/** Result of a bounded drain run. */
export interface DrainRun {
  attempted: number;
  claims: number;
  /** Work remains: due soon (`nextDueAt`), requeued, or the budget ran out after doing work. */
  workRemains: boolean;
  /** Earliest time a pending pair becomes workable, or null when nothing is pending. */
  nextDueAt: Date | null;
  stoppedByBudget: boolean;
}

/**
 * Runs the drain (seed 004 "Dispatch is woken ..., drained by cron"): ONE claimer per process
 * takes due pairs in batches (OUTBOX_CLAIM_BATCH per statement) while fewer than
 * OUTBOX_DISPATCH_CONCURRENCY sends are in flight, and starts their work. When it finds fewer pairs
 * than it asked for it sleeps until the earliest due time (of the pairs it saw, and of the pairs
 * this process released since), a NOTIFY from an enqueue, a bus wake-up, or its poll timer —
 * wake-ups are hints; the timers and the sweep drain without them. One claimer instead of one
 * poller per slot: an idle process asks the database once per poll, not once per slot.
 */
@Injectable()
export class DrainService implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private claimer?: Promise<void>;
  private sleepers = new Set<() => void>();
  /** The claimer waiting for a free slot. */
  private slotWaiter?: () => void;
  /** The work of claimed pairs still running (one slot each). */
  private inFlight = new Set<Promise<unknown>>();
  /** The local timer for the earliest due time of a pair this process released. */
  private dueTimer?: ReturnType<typeof setTimeout>;
  private dueTimerAt = Infinity;
  private listener?: pg.Client;
  /** When the next bus wake-up this process published will arrive (ms epoch), to avoid piling them up. */
  private busWakeAt = 0;

  constructor(
    private readonly dispatch: DispatchService,
    private readonly pairs: PairLeaseRepository,
    private readonly bus: BusService,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
  ) {
    this.dispatch.onPairsDue = (at) => this.noteDue(at);
  }

  onApplicationBootstrap(): void {
    if (this.config.OUTBOX_DRAIN_AUTOSTART) this.start();
  }

  /** Starts the claimer and the NOTIFY listener. */
  start(): void {
    if (this.running) return;
    this.running = true;
    void this.listen();
    this.claimer = this.work();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    clearTimeout(this.dueTimer);
    this.wake();
    this.slotWaiter?.();
    await this.listener?.end().catch(() => undefined);
    await this.claimer;
    await Promise.all(this.inFlight);
  }

  /**
   * A pair this process released is due at `at`: the claimer looks then (rounded up to
   * MIN_IDLE_SLEEP_MS), unless it already will earlier. Only while the pool runs.
   */
  private noteDue(at: Date): void {
    if (!this.running) return;
    const delay = Math.ceil(Math.max(0, at.getTime() - this.clock.now().getTime()) / MIN_IDLE_SLEEP_MS) * MIN_IDLE_SLEEP_MS;
    const fireAt = Date.now() + delay;
    if (this.dueTimer && this.dueTimerAt <= fireAt) return;
    clearTimeout(this.dueTimer);
    this.dueTimerAt = fireAt;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = undefined;
      this.dueTimerAt = Infinity;
      this.wake();
    }, delay);
  }

  /** Wakes every idle worker now. */
  wake(): void {
    const sleepers = [...this.sleepers];
    this.sleepers.clear();
    for (const resume of sleepers) resume();
  }

  /** A delayed wake-up came back from the broker. */
  @OnBusMessage(DISPATCH_WAKE)
  async onWake(): Promise<void> {
    this.wake();
  }

  /**
   * Drains until nothing is claimable or `budgetMs` passes, with `concurrency` parallel claimers;
   * used by the sweep's backstop and by tests that drive the drain by hand. Owes a wake-up when
   * work remains (seed 004: a requeue, or a budget stop after doing work).
   */
  async drain(budgetMs: number, concurrency = this.config.OUTBOX_DISPATCH_CONCURRENCY): Promise<DrainRun> {
    const deadline = Date.now() + budgetMs;
    const run: DrainRun = { attempted: 0, claims: 0, workRemains: false, nextDueAt: null, stoppedByBudget: false };
    let exhausted = false;
    const loop = async () => {
      while (!exhausted) {
        if (Date.now() >= deadline) {
          run.stoppedByBudget = true;
          return;
        }
        const step = await this.dispatch.step();
        if (step.claims > 0) {
          run.claims += step.claims;
          run.attempted += step.attempted;
          if (step.requeued) run.workRemains = true;
          continue;
        }
        exhausted = true;
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, loop));
    // Asked once all claimers stopped: a claimer that found nothing may have seen a peer's pair mid-claim.
    run.nextDueAt = await this.uow.run((tx) => this.pairs.nextDue(tx, this.clock.now()));
    if (run.nextDueAt || (run.stoppedByBudget && run.claims > 0)) run.workRemains = true;
    if (run.workRemains) await this.scheduleWake(run.nextDueAt ?? this.clock.now());
    return run;
  }

  /**
   * Publishes a delayed wake-up for `at` (best effort: a failed publish is logged, not thrown; the
   * timers still drain). Skipped when an earlier one is already on its way.
   */
  async scheduleWake(at: Date): Promise<void> {
    const delay = Math.max(0, at.getTime() - this.clock.now().getTime());
    if (delay > MAX_BUS_WAKE_DELAY_MS) return;
    const rounded = Math.ceil(delay / BUS_WAKE_GRANULARITY_MS) * BUS_WAKE_GRANULARITY_MS;
    const arrival = Date.now() + rounded;
    if (this.busWakeAt > Date.now() && this.busWakeAt <= arrival) return;
    this.busWakeAt = arrival;
    try {
      await this.bus.publishDelayed({ event_id: `wake:${randomUUID()}`, type: DISPATCH_WAKE, organization_id: null, occurred_at: this.clock.now().toISOString(), data: {} }, rounded);
    } catch (err) {
      this.busWakeAt = 0;
      this.logger.warn({ event: 'outbox.wake_publish_failed', err: (err as Error).message }, 'could not publish a dispatch wake-up');
    }
  }

  /**
   * The claimer: claims a batch when that many slots are free (or any number when nothing is in
   * flight), starts its work, and claims again at once when it got all it asked for; otherwise it
   * sleeps until due, woken, or polled.
   */
  private async work(): Promise<void> {
    const capacity = this.config.OUTBOX_DISPATCH_CONCURRENCY;
    const batch = Math.min(this.config.OUTBOX_CLAIM_BATCH, capacity);
    while (this.running) {
      const free = capacity - this.inFlight.size;
      if (free < batch && this.inFlight.size > 0) {
        await new Promise<void>((resolve) => (this.slotWaiter = resolve));
        this.slotWaiter = undefined;
        continue;
      }
      let claimed: ClaimedBatch;
      try {
        claimed = await this.dispatch.claim(Math.min(batch, free));
      } catch (err) {
        this.logger.error({ event: 'outbox.drain_failed', err: (err as Error).message }, 'drain step failed');
        await this.sleep(ERROR_PAUSE_MS);
        continue;
      }
      for (const work of claimed.work) {
        const slot: Promise<unknown> = work.finally(() => {
          this.inFlight.delete(slot);
          this.slotWaiter?.();
        });
        this.inFlight.add(slot);
      }
      if (claimed.claims >= Math.min(batch, free)) continue;
      let wait = this.config.OUTBOX_IDLE_POLL_MS;
      if (claimed.nextDueAt) {
        const untilDue = claimed.nextDueAt.getTime() - this.clock.now().getTime();
        wait = Math.max(0, Math.min(wait, untilDue));
        void this.scheduleWake(claimed.nextDueAt);
      }
      // A pair due "now" but not claimable is held by a busy peer: look again shortly, not in a spin.
      await this.sleep(Math.max(wait, MIN_IDLE_SLEEP_MS));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  /** LISTENs for enqueue notifications (every replica hears them); reconnects while running. */
  private async listen(): Promise<void> {
    while (this.running) {
      const client = new pg.Client({ connectionString: this.config.DATABASE_URL });
      try {
        await client.connect();
        this.listener = client;
        client.on('notification', () => this.wake());
        await client.query(`LISTEN ${quoteIdent(wakeChannelOf(this.uow.schema))}`);
        await new Promise<void>((resolve) => {
          client.once('error', () => resolve());
          client.once('end', () => resolve());
        });
      } catch (err) {
        if (this.running) this.logger.warn({ event: 'outbox.listen_failed', err: (err as Error).message }, 'LISTEN failed; timers only');
      }
      await client.end().catch(() => undefined);
      if (this.running) await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
