import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { OutgoingMessage } from '@touchpoint/contracts';
import { type Logger, METRIC_PREFIX, Metrics, zeroCounter } from '@touchpoint/observability';
import { APP_CONFIG, IntervalTask, LOGGER, tryWithAdvisoryLock, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { decisionRequested } from '../enrollments/enrollments.service.js';
import type { OutreachConfig } from '../outreach.config.js';
import { actionApproved } from '../review/review.service.js';
import { SweepRepository } from './sweep.repository.js';

/** Most events one sweep pass sends, Q1 first (seed 003 §4.7: at most 5000 per pass). */
export const SWEEP_MAX_EVENTS_PER_PASS = 5000;
/** The advisory lock that keeps one pass at a time across replicas (seed 003 §4.7: concurrency 1); the schema is appended. */
export const SWEEP_LOCK_KEY = 'outreach:due-sweep';

/** What one pass did. `ran: false` when another replica held the lock. */
export interface SweepPassResult {
  ran: boolean;
  decisions: number;
  executions: number;
}

/**
 * The due sweep (seed 003 §4.7): every OUTREACH_SWEEP_INTERVAL_MS (5 minutes by default), alone
 * under an advisory lock, it sends
 * - Q1 → `outreach.decision.requested` reason `followup_due`, id `due:{enrollment_id}:{next_check_at}`,
 *   for each due active enrollment; an enrollment with no earlier decision is the enrolled run a
 *   pause skipped: its event still says `followup_due`, and the decision runner, finding no earlier
 *   decision, runs it as a first touch (the first-touch objective);
 * - Q2 → `outreach.action.approved`, id `approved:{action_id}:{next_attempt_at}`, for each approved
 *   action past its next attempt;
 * both skipping paused campaigns and stopped organizations, at most 5,000 events per pass, Q1
 * first. It writes no row of its own: the runners' gate and recheck read the rows again, and the
 * event ids make a repeated pass harmless.
 */
@Injectable()
export class DueSweepService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly task: IntervalTask;
  private readonly events: Counter<'kind'>;
  private readonly passes: Counter<'outcome'>;
  private readonly lag: Histogram<'kind'>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly sweep: SweepRepository,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: OutreachConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.events = new Counter({ name: `${METRIC_PREFIX}outreach_sweep_events_total`, help: 'Events the outreach due sweep sent, by kind (decision, execution)', labelNames: ['kind'], registers: [metrics.registry] });
    this.passes = new Counter({ name: `${METRIC_PREFIX}outreach_sweep_passes_total`, help: 'Outreach due sweep passes, by outcome (ran, locked, failed)', labelNames: ['outcome'], registers: [metrics.registry] });
    // At 0 from the start: TouchpointOutreachSweepFailing counts failed passes with increase().
    zeroCounter(this.passes, { outcome: ['ran', 'locked', 'failed'] });
    zeroCounter(this.events, { kind: ['decision', 'execution'] });
    this.lag = new Histogram({
      name: `${METRIC_PREFIX}outreach_sweep_lag_seconds`,
      help: 'How late a due row was when the sweep sent its event (now − next_check_at / next_attempt_at), seconds',
      labelNames: ['kind'],
      buckets: [1, 10, 60, 300, 600, 1800, 3600, 21600, 86400],
      registers: [metrics.registry],
    });
    const db = this.uow.dataSource;
    const repository = this.sweep;
    // Read at scrape time: the tables are the truth, and a gauge kept by hand would drift across replicas.
    new Gauge({
      name: `${METRIC_PREFIX}outreach_actions`,
      help: 'Outreach proposed actions by status (read from the table at scrape time)',
      labelNames: ['status'],
      registers: [metrics.registry],
      async collect() {
        const rows = await repository.actionsByStatus(db);
        this.reset();
        for (const r of rows) this.set({ status: r.status }, r.n);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}outreach_due_enrollments`,
      help: 'Active enrollments whose next check has passed (the due sweep backlog)',
      registers: [metrics.registry],
      async collect() {
        this.set(await repository.dueEnrollmentCount(db));
      },
    });
    this.task = new IntervalTask({
      everyMs: config.OUTREACH_SWEEP_INTERVAL_MS,
      run: () => this.runOnce(),
      onError: (err) => {
        this.passes.inc({ outcome: 'failed' });
        this.logger.error({ event: 'outreach.sweep_failed', err: err.message }, 'due sweep pass failed');
      },
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.OUTREACH_RUNNER_ENABLED) this.task.start();
  }

  onModuleDestroy(): Promise<void> {
    return this.task.stop();
  }

  /**
   * One pass, if no other replica runs one now. Reads and publishes in one transaction (the
   * transactional outbox), so a crash mid-pass sends nothing and the next pass starts over.
   */
  async runOnce(): Promise<SweepPassResult> {
    const outcome = await tryWithAdvisoryLock(this.uow.dataSource, `${SWEEP_LOCK_KEY}:${this.uow.schema}`, () =>
      this.uow.run(async (tx) => {
        const now = this.clock.now();
        const due = await this.sweep.dueEnrollments(tx, now, SWEEP_MAX_EVENTS_PER_PASS);
        const approved = await this.sweep.dueActions(tx, now, SWEEP_MAX_EVENTS_PER_PASS - due.length);
        const messages: OutgoingMessage[] = [
          ...due.map((e) => decisionRequested(e.organization_id, `due:${e.id}:${new Date(e.next_check_at).toISOString()}`, { enrollment_id: e.id, reason: 'followup_due' })),
          ...approved.map((a) => actionApproved(a.organization_id, a.id, a.enrollment_id, new Date(a.next_attempt_at))),
        ];
        if (messages.length) await tx.publish(messages);
        for (const e of due) this.lag.observe({ kind: 'decision' }, Math.max(0, now.getTime() - new Date(e.next_check_at).getTime()) / 1000);
        for (const a of approved) this.lag.observe({ kind: 'execution' }, Math.max(0, now.getTime() - new Date(a.next_attempt_at).getTime()) / 1000);
        return { decisions: due.length, executions: approved.length };
      }),
    );
    if (!outcome.ran) {
      this.passes.inc({ outcome: 'locked' });
      return { ran: false, decisions: 0, executions: 0 };
    }
    const { decisions, executions } = outcome.result!;
    this.passes.inc({ outcome: 'ran' });
    this.events.inc({ kind: 'decision' }, decisions);
    this.events.inc({ kind: 'execution' }, executions);
    if (decisions || executions) this.logger.info({ event: 'outreach.sweep_pass', decisions, executions }, 'due sweep sent events');
    return { ran: true, decisions, executions };
  }
}
