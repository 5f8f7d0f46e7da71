import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { BULK_JOB_MAX_CONTACTS, type BulkJobCreateData, type BulkJobRef, type BulkJobView } from '@touchpoint/contracts';
import { isUuid, notFound, poolOf, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork, WakeSignal } from '@touchpoint/runtime';
import { truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { EnrollmentsService } from '../enrollments/enrollments.service.js';
import { FlowsRepository } from '../flows/flows.repository.js';
import type { FollowupsConfig } from '../followups.config.js';
import { check } from '../input-checks/input-checks.js';
import { compileSegment } from '../rules/segment-sql.js';
import { type BulkJobRow, BulkJobsRepository } from './bulk-jobs.repository.js';

const toView = (r: BulkJobRow): BulkJobView => ({
  id: r.id,
  customer_id: r.organization_id,
  flow_id: r.flow_id,
  operation_key: r.operation_key,
  source: r.source.kind,
  status: r.status,
  total: r.total,
  processed: r.cursor,
  enrolled: r.enrolled,
  rejected: r.rejected,
  last_error: r.last_error,
  attempts: r.attempts,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  finished_at: r.finished_at ? r.finished_at.toISOString() : null,
});

/** A claimed job: its id and the lease token that fences every chunk. */
export interface BulkLease {
  jobId: string;
  token: string;
}

/**
 * Bulk enrollment jobs (seed 000 "Worker … bulk enrollment", "followup_bulk_jobs"): a contact list,
 * or a segment frozen into a list at creation, enrolled in chunks by whoever holds the job's lease.
 * Each chunk enrolls (a savepoint per contact, operation key per job × contact), moves the cursor,
 * counts rejections by reason and renews the lease in one transaction, fenced on the lease token:
 * a worker that died mid-job leaves a lease that runs out, and the next one resumes at the cursor
 * without enrolling anyone twice. The plan limit of live enrollments applies to every contact.
 */
@Injectable()
export class BulkJobsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: BulkJobsRepository,
    private readonly flows: FlowsRepository,
    private readonly enrollments: EnrollmentsService,
    private readonly signal: WakeSignal,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Creates (or, for a repeated operation_key, returns) a job.
   * @throws AppError validation_failed (neither or both of contact_ids and segment, too many
   *   contacts, a bad segment); not_found (flow); idempotency_conflict (key used for another flow)
   */
  async create(input: BulkJobCreateData): Promise<{ job: BulkJobView; created: boolean }> {
    check(input)
      .uuid('organization_id')
      .uuid('flow_id')
      .string('operation_key', 1, 200)
      .custom('contact_ids', input.contact_ids === undefined || (Array.isArray(input.contact_ids) && input.contact_ids.length <= BULK_JOB_MAX_CONTACTS && input.contact_ids.every(isUuid)) ? [] : [`contact_ids must be at most ${BULK_JOB_MAX_CONTACTS} UUIDs`])
      .custom('source', (input.contact_ids === undefined) === (input.segment === undefined) ? ['give contact_ids or segment, not both'] : [])
      .done();
    const db = poolOf(this.uow.dataSource);
    const existing = await this.repository.findByOperationKey(db, input.organization_id, input.operation_key);
    if (existing) {
      if (existing.flow_id !== input.flow_id) throw new AppError(ErrorCode.IdempotencyConflict, 'this operation_key was used for another flow', { job_id: existing.id });
      return { job: toView(existing), created: false };
    }
    const now = this.clock.now();
    const row = await this.uow.run(async (tx) => {
      if (!(await this.flows.exists(tx, input.organization_id, input.flow_id))) throw notFound('flow');
      let contactIds: string[];
      if (input.contact_ids) contactIds = [...new Set(input.contact_ids)];
      else {
        const params: unknown[] = [input.organization_id, BULK_JOB_MAX_CONTACTS + 1];
        let where: string;
        try {
          where = compileSegment(input.segment!, params);
        } catch (err) {
          throw new AppError(ErrorCode.ValidationFailed, (err as Error).message, [{ field: 'segment', problems: [(err as Error).message] }]);
        }
        // Frozen now: contacts that match later are not added; erased ones are never enrolled.
        contactIds = await this.repository.segmentContactIds(tx, where, params);
        if (contactIds.length > BULK_JOB_MAX_CONTACTS) throw new AppError(ErrorCode.ValidationFailed, `the segment holds more than ${BULK_JOB_MAX_CONTACTS} contacts`, [{ field: 'segment', problems: ['too many contacts'] }]);
      }
      return this.repository.insert(tx, {
        id: randomUUID(),
        organizationId: input.organization_id,
        flowId: input.flow_id,
        operationKey: input.operation_key,
        source: input.segment ? { kind: 'segment', segment: input.segment } : { kind: 'list' },
        contactIds,
        status: contactIds.length ? 'pending' : 'completed',
        now,
      });
    });
    if (!row) return this.create(input);
    this.signal.wake();
    return { job: toView(row), created: true };
  }

  /** @throws AppError not_found */
  async get(input: BulkJobRef): Promise<BulkJobView> {
    check(input).uuid('organization_id').uuid('job_id').done();
    const row = await this.repository.find(poolOf(this.uow.dataSource), input.organization_id, input.job_id);
    if (!row) throw notFound('bulk job');
    return toView(row);
  }

  /**
   * Claims the oldest open job whose lease is free or ran out, with a new lease token. Each claim
   * counts one attempt (reset by every chunk that commits), counted here rather than when a chunk
   * throws so that a worker killed mid-chunk counts too: a job claimed once more than
   * FOLLOWUP_BULK_MAX_ATTEMPTS times without a chunk going through ends `failed` instead, keeping
   * its last error (or saying why it was given up), and the next open job is tried.
   */
  async claim(): Promise<BulkLease | undefined> {
    const max = this.config.FOLLOWUP_BULK_MAX_ATTEMPTS;
    for (;;) {
      const now = this.clock.now();
      const token = randomUUID();
      const row = await this.repository.claimNext(poolOf(this.uow.dataSource), {
        now,
        token,
        lockedUntil: new Date(now.getTime() + this.config.FOLLOWUP_BULK_LEASE_MS),
        maxAttempts: max,
        gaveUp: `gave up after ${max} attempts without a chunk going through`,
      });
      if (!row) return undefined;
      if (row.status !== 'failed') return { jobId: row.id, token };
      this.logger.error({ event: 'followups.bulk_job_failed', organization_id: row.organization_id, job_id: row.id, attempts: max, err: row.last_error }, 'bulk enrollment job failed');
    }
  }

  /**
   * Enrolls the next chunk of a job this worker holds the lease of.
   * @returns `more` to go on, `done` when the job completed, `lost` when the lease moved to another worker
   */
  async runChunk(lease: BulkLease): Promise<'more' | 'done' | 'lost'> {
    const now = this.clock.now();
    const outcome = await this.uow.run(async (tx) => {
      const job = await this.repository.lockLeased(tx, lease.jobId, lease.token);
      if (!job) return 'lost' as const;
      const chunk = job.contact_ids.slice(job.cursor, job.cursor + this.config.FOLLOWUP_BULK_CHUNK);
      const rejected = { ...job.rejected };
      let enrolled = 0;
      for (const contactId of chunk) {
        const result = await this.enrollOne(tx, job, contactId);
        if (result === 'enrolled') enrolled += 1;
        else rejected[result] = (rejected[result] ?? 0) + 1;
      }
      const cursor = job.cursor + chunk.length;
      const done = cursor >= job.total;
      // A chunk went through: the count of attempts starts again, this claim being the first for the next chunk.
      await this.repository.recordChunk(tx, { jobId: job.id, cursor, enrolled, rejected, lockedUntil: done ? null : new Date(now.getTime() + this.config.FOLLOWUP_BULK_LEASE_MS), now, done });
      return done ? ('done' as const) : ('more' as const);
    });
    this.signal.wake();
    return outcome;
  }

  /** Claims a job and runs it to the end (or until its lease is lost). @returns whether a job was claimed */
  async runOne(): Promise<boolean> {
    const lease = await this.claim();
    if (!lease) return false;
    try {
      while ((await this.runChunk(lease)) === 'more');
    } catch (err) {
      // The chunk rolled back; the lease runs out and the job is resumed at its cursor, unless this
      // was its last attempt: then it ends `failed` now, with the error that stopped it.
      const error = truncateText((err as Error).message, 1000);
      const after = await this.repository.recordChunkFailure(poolOf(this.uow.dataSource), { jobId: lease.jobId, token: lease.token, error, now: this.clock.now(), maxAttempts: this.config.FOLLOWUP_BULK_MAX_ATTEMPTS });
      const failed = after?.status === 'failed';
      this.logger[failed ? 'error' : 'warn'](
        { event: failed ? 'followups.bulk_job_failed' : 'followups.bulk_chunk_failed', organization_id: after?.organization_id, job_id: lease.jobId, attempts: after?.attempts, err: error },
        failed ? 'bulk enrollment job failed' : 'bulk enrollment chunk failed',
      );
    }
    return true;
  }

  private async enrollOne(tx: Tx, job: BulkJobRow, contactId: string): Promise<string> {
    try {
      const { created } = await tx.savepoint(() => this.enrollments.enrollInTx(tx, { organization_id: job.organization_id, flow_id: job.flow_id, contact_id: contactId, operation_key: `bulk:${job.id}:${contactId}` }, 'bulk'));
      return created ? 'enrolled' : 'duplicate';
    } catch (err) {
      if ((err as { constraint?: string }).constraint === 'enrollments_one_live_idx') return 'already_enrolled';
      if (err instanceof AppError && err.code === ErrorCode.Conflict) return String((err.details as { reason?: unknown } | undefined)?.reason ?? 'conflict');
      if (err instanceof AppError && err.code === ErrorCode.PublishRequired) return 'flow_not_published';
      throw err;
    }
  }
}
