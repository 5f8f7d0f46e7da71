import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, IntervalTask, LOGGER, tryWithAdvisoryLock, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { DrainService } from '../drain/drain.service.js';
import { SweepRepository } from './sweep.repository.js';
import { OutboxMetrics } from '../metrics/outbox.metrics.js';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { LeaseRecoveryService } from './lease-recovery.service.js';

/** Rows deleted per pruning statement, so one sweep never holds long locks. */
const PRUNE_BATCH = 5000;

/** The sweep's steps, in order. */
export const SWEEP_STEPS = ['probe', 'wake', 'recover', 'drain', 'prune'] as const;
export type SweepStep = (typeof SWEEP_STEPS)[number];

/** What each step of one sweep did: its result, or the error it threw. */
export type SweepReport = Record<SweepStep, { ok: true; result: unknown } | { ok: false; error: string }>;

/**
 * The every-minute sweep (seed 004 "Dispatch is woken ..., drained by cron"): probe the due work
 * (age warning and gauges), publish a wake-up, recover stranded leases, drain for its own budget
 * (the backstop when wake-ups are lost), and prune. Each step is isolated: one that throws never
 * costs the others their run — the drain runs even when the probe failed.
 */
@Injectable()
export class SweepService implements OnApplicationBootstrap, OnModuleDestroy {
  private running?: Promise<SweepReport>;
  private readonly task: IntervalTask;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: SweepRepository,
    private readonly recovery: LeaseRecoveryService,
    private readonly drainService: DrainService,
    private readonly clock: Clock,
    private readonly metrics: OutboxMetrics,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
  ) {
    // Each step logs its own failure (runSteps); what reaches onError is a bug in the sweep itself.
    this.task = new IntervalTask({
      everyMs: config.OUTBOX_SWEEP_INTERVAL_MS,
      run: () => this.sweep(),
      onError: (err) => this.logger.error({ event: 'outbox.sweep_failed', err: err.message }, 'sweep failed'),
    });
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.task.stop();
    // A sweep a test or an RPC started outside the schedule.
    await this.running?.catch(() => undefined);
  }

  /** Runs one sweep (overlapping calls share the run in progress). */
  sweep(): Promise<SweepReport> {
    if (!this.running) {
      this.running = this.runSteps().finally(() => {
        this.running = undefined;
      });
    }
    return this.running;
  }

  private async runSteps(): Promise<SweepReport> {
    const report = {} as SweepReport;
    for (const step of SWEEP_STEPS) {
      try {
        report[step] = { ok: true, result: await this.runStep(step) };
        this.metrics.sweepSteps.inc({ step, result: 'ok' });
      } catch (err) {
        report[step] = { ok: false, error: (err as Error)?.message ?? String(err) };
        this.metrics.sweepSteps.inc({ step, result: 'error' });
        this.logger.error({ event: 'outbox.sweep_step_failed', step, err: (err as Error)?.message }, 'sweep step failed; the other steps still run');
      }
    }
    return report;
  }

  /** One step by name (public so a test can make a single step throw). */
  runStep(step: SweepStep): Promise<unknown> {
    switch (step) {
      case 'probe':
        return this.probe();
      case 'wake':
        return this.wake();
      case 'recover':
        return this.recovery.recover();
      case 'drain':
        return this.drainService.drain(this.config.OUTBOX_SWEEP_DRAIN_BUDGET_MS);
      case 'prune':
        return this.prune();
    }
  }

  /** Sets the age and ambiguity gauges and warns when the oldest due entry is too old. */
  async probe(): Promise<{ due: number; oldestDueAgeMs: number; ambiguous: number }> {
    const now = this.clock.now();
    const probe = await this.uow.run((tx) => this.repository.dueProbe(tx, now));
    const ageMs = probe.oldestDueAt ? Math.max(0, now.getTime() - new Date(probe.oldestDueAt).getTime()) : 0;
    this.metrics.oldestDueAge.set(ageMs / 1000);
    this.metrics.ambiguous.set(probe.ambiguous);
    if (ageMs > this.config.OUTBOX_PENDING_AGE_ALERT_MS) {
      this.logger.warn({ event: 'outbox.pending_age_exceeded', oldest_due_age_ms: ageMs, due: probe.due, threshold_ms: this.config.OUTBOX_PENDING_AGE_ALERT_MS }, 'the oldest due outbox entry is too old');
    }
    return { due: probe.due, oldestDueAgeMs: ageMs, ambiguous: probe.ambiguous };
  }

  /** The low-latency path: wake local workers now and publish a wake-up for the other replicas. */
  async wake(): Promise<void> {
    this.drainService.wake();
    await this.drainService.scheduleWake(this.clock.now());
  }

  /** Deletes settled rows past retention; one replica at a time. */
  async prune(): Promise<{ ran: boolean; entries: number; pairs: number; statuses: number }> {
    const { ran, result } = await tryWithAdvisoryLock(this.uow.dataSource, `outbox-prune:${this.uow.schema}`, () =>
      this.uow.run((tx) => this.repository.prune(tx, this.clock.now(), this.config.OUTBOX_ACCEPTED_RETENTION_DAYS, this.config.OUTBOX_FAILED_RETENTION_DAYS, PRUNE_BATCH)),
    );
    const counts = result ?? { entries: 0, pairs: 0, statuses: 0 };
    this.metrics.pruned.inc({ kind: 'entries' }, counts.entries);
    this.metrics.pruned.inc({ kind: 'pairs' }, counts.pairs);
    this.metrics.pruned.inc({ kind: 'statuses' }, counts.statuses);
    return { ran, ...counts };
  }
}
