import { Inject, Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import type { RetentionReport } from '@touchpoint/contracts';
import { METRIC_PREFIX, type Logger, Metrics } from '@touchpoint/observability';
import { LOGGER, tryWithAdvisoryLock, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { poolOf } from '@touchpoint/database';
import { DEFAULT_FOLLOWUP_SETTINGS } from '../settings/settings.repository.js';
import { RetentionRepository } from './retention.repository.js';

/** Processed triggers are kept this long, days (seed 000 "Retention": processed triggers). */
export const TRIGGER_RETENTION_DAYS = 7;
/** Finished bulk jobs are kept this long, days (seed 000 "Retention": old bulk jobs). */
export const BULK_JOB_RETENTION_DAYS = 30;
/** Rows one delete statement takes, so no pass holds a long transaction. */
const BATCH = 1000;
/** One pass at a time across every replica and the CLI. */
export const RETENTION_LOCK_KEY = 'followups.retention';

/**
 * Retention of the follow-up data (seed 000 "Retention"), one pass at a time under an advisory
 * lock: finished enrollments (with their timeline and effects) older than their organization's
 * `retention_days`; finished one-off returns likewise (our one-off object: a return holds no flow
 * version of its own, so there are no one-off versions to delete); processed triggers after 7
 * days; finished bulk jobs after 30 days. Live rows are never touched. Deletes go in batches.
 */
@Injectable()
export class RetentionService {
  private readonly lastSuccess: Gauge;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly repository: RetentionRepository,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.lastSuccess = new Gauge({ name: `${METRIC_PREFIX}followup_retention_last_success_seconds`, help: 'Unix time of the last completed follow-up retention pass', registers: [metrics.registry] });
  }

  /** Runs a pass now unless one is running. @returns what it deleted, or `ran: false` when another pass holds the lock */
  async run(): Promise<RetentionReport> {
    const { ran, result } = await tryWithAdvisoryLock(this.uow.dataSource, RETENTION_LOCK_KEY, () => this.pass());
    if (!ran || !result) return { ran: false, enrollments: 0, events: 0, effects: 0, promises: 0, triggers: 0, bulk_jobs: 0 };
    this.lastSuccess.set(Math.floor(this.clock.now().getTime() / 1000));
    this.logger.info({ event: 'followups.retention_pass', ...result }, 'follow-up retention pass done');
    return result;
  }

  private async pass(): Promise<RetentionReport> {
    const now = this.clock.now();
    const db = poolOf(this.uow.dataSource);
    const report: RetentionReport = { ran: true, enrollments: 0, events: 0, effects: 0, promises: 0, triggers: 0, bulk_jobs: 0 };
    const days = DEFAULT_FOLLOWUP_SETTINGS.retention_days;
    for (;;) {
      const r = await this.repository.deleteFinishedEnrollments(db, now, days, BATCH);
      report.enrollments += r.enrollments;
      report.events += r.events;
      report.effects += r.effects;
      if (r.enrollments < BATCH) break;
    }
    report.promises = await batched(() => this.repository.deleteFinishedPromises(db, now, days, BATCH));
    report.triggers = await batched(() => this.repository.deleteProcessedTriggers(db, now, TRIGGER_RETENTION_DAYS, BATCH));
    report.bulk_jobs = await batched(() => this.repository.deleteFinishedBulkJobs(db, now, BULK_JOB_RETENTION_DAYS, BATCH));
    return report;
  }
}

/** Repeats a batch delete until it takes less than a batch. @returns rows deleted */
async function batched(deleteBatch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await deleteBatch();
    total += n;
    if (n < BATCH) return total;
  }
}
