import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { DecisionRunner } from '../decisions/decision.runner.js';
import { ExecutionRunner } from '../execution/execution.runner.js';
import type { OutreachConfig } from '../outreach.config.js';
import { RunContext, type RunHandler } from './run-context.js';
import { type RunKind, type RunRow, RunsRepository } from './runs.repository.js';

/** Longest backoff between attempts of a run, ms (ours). */
const MAX_RETRY_DELAY_MS = 10 * 60_000;

/**
 * The runner loops (DESIGN §6: the seed's workflows become runners consuming outreach's own
 * events). A bus handler only records a run; these loops claim ready runs (leases with a fence, the
 * per-organization decision concurrency key), execute them step by step with memoised outputs, and
 * retry a failed run with exponential backoff until OUTREACH_RUN_MAX_ATTEMPTS, then hand it to its
 * kind's failure handler. A run's lease is renewed while it works (a heartbeat), so a run a
 * killed process held is taken over within one OUTREACH_RUN_LEASE_MS. A wake-up after a new run only saves latency: the loops also poll.
 */
@Injectable()
export class RunnerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly handlers: { [K in RunKind]: RunHandler<K> };
  private stopping = false;
  private readonly loops: Promise<void>[] = [];
  private wakeUps: (() => void)[] = [];
  private readonly outcomes: Counter<'kind' | 'outcome'>;
  private readonly seconds: Histogram<'kind'>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly runs: RunsRepository,
    private readonly clock: Clock,
    decisions: DecisionRunner,
    executions: ExecutionRunner,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: OutreachConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.handlers = { decision: decisions, execution: executions };
    this.outcomes = new Counter({ name: `${METRIC_PREFIX}outreach_runs_total`, help: 'Outreach runner attempts, by kind and outcome (done, retry, failed, lost_lease)', labelNames: ['kind', 'outcome'], registers: [metrics.registry] });
    this.seconds = new Histogram({ name: `${METRIC_PREFIX}outreach_run_seconds`, help: 'Time of one outreach run attempt, seconds', labelNames: ['kind'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [metrics.registry] });
  }

  onApplicationBootstrap(): void {
    if (!this.config.OUTREACH_RUNNER_ENABLED) return;
    for (let i = 0; i < this.config.OUTREACH_RUNNER_CONCURRENCY; i++) this.loops.push(this.loop());
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.wake();
    await Promise.all(this.loops);
  }

  /** Wakes idle loops (a bus handler recorded a run). */
  wake(): void {
    const waiting = this.wakeUps;
    this.wakeUps = [];
    for (const resolve of waiting) resolve();
  }

  /** Claims and executes ready runs until none is ready; returns how many ran (tests drive it). */
  async drain(): Promise<number> {
    let n = 0;
    while (!this.stopping && (await this.runOne())) n++;
    return n;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      try {
        if (await this.runOne()) continue;
      } catch (err) {
        this.logger.error({ event: 'outreach.runner_failed', err: (err as Error).message }, 'runner loop error');
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.config.OUTREACH_RUNNER_POLL_MS);
        this.wakeUps.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private async runOne(): Promise<boolean> {
    const run = await this.uow.run((tx) => this.runs.claim(tx, this.clock.now(), this.config.OUTREACH_RUN_LEASE_MS, this.config.OUTREACH_DECISION_CONCURRENCY_PER_ORG));
    if (!run) return false;
    await this.execute(run);
    return true;
  }

  private async execute(run: RunRow): Promise<void> {
    const handler = this.handlerOf(run);
    const end = this.seconds.startTimer({ kind: run.kind });
    const log = { organization_id: run.organization_id, run_key: run.run_key, kind: run.kind, attempt: run.attempts };
    // The heartbeat: the lease is renewed every third of OUTREACH_RUN_LEASE_MS while the run works,
    // so a live runner keeps it however slow its model is, and a dead one loses it within a lease.
    const leaseMs = this.config.OUTREACH_RUN_LEASE_MS;
    const heartbeat = setInterval(
      () => {
        this.uow.run((tx) => this.runs.renew(tx, run.id, run.fence, new Date(this.clock.now().getTime() + leaseMs))).catch((err: Error) => this.logger.warn({ event: 'outreach.run_lease_renew_failed', ...log, err: err.message }, 'run lease not renewed'));
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    try {
      await handler.execute();
      const held = await this.uow.run((tx) => this.runs.finish(tx, run.id, run.fence, 'done', null, this.clock.now()));
      this.outcomes.inc({ kind: run.kind, outcome: held ? 'done' : 'lost_lease' });
    } catch (err) {
      const message = (err as Error)?.message ?? String(err);
      if (run.attempts >= this.config.OUTREACH_RUN_MAX_ATTEMPTS) {
        this.logger.error({ event: 'outreach.run_failed', ...log, err: message }, 'run failed for good');
        const held = await this.uow.run((tx) => this.runs.finish(tx, run.id, run.fence, 'failed', message, this.clock.now()));
        if (held) await handler.onFailure(message).catch((e) => this.logger.error({ event: 'outreach.run_on_failure_failed', ...log, err: (e as Error).message }, 'failure handler failed'));
        this.outcomes.inc({ kind: run.kind, outcome: 'failed' });
      } else {
        const delay = Math.min(this.config.OUTREACH_RUN_RETRY_BASE_MS * 2 ** (run.attempts - 1), MAX_RETRY_DELAY_MS);
        this.logger.warn({ event: 'outreach.run_retry', ...log, delay_ms: delay, err: message }, 'run attempt failed; retrying');
        await this.uow.run((tx) => this.runs.retryLater(tx, run.id, run.fence, new Date(this.clock.now().getTime() + delay), message));
        this.outcomes.inc({ kind: run.kind, outcome: 'retry' });
      }
    } finally {
      clearInterval(heartbeat);
      end();
    }
  }

  /** The run's handler, bound to the run (its kind decides which, and the input's type with it). */
  private handlerOf(run: RunRow): { execute(): Promise<void>; onFailure(error: string): Promise<void> } {
    if (run.kind === 'decision') {
      const handler = this.handlers.decision;
      return { execute: () => handler.execute(new RunContext(run, this.runs, this.uow, this.clock)), onFailure: (error) => handler.onFailure(run, error) };
    }
    const handler = this.handlers.execution;
    return { execute: () => handler.execute(new RunContext(run, this.runs, this.uow, this.clock)), onFailure: (error) => handler.onFailure(run, error) };
  }
}
