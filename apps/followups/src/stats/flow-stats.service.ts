import { Injectable } from '@nestjs/common';
import type { FlowRef, FlowStatsView } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { notFound, poolOf } from '@touchpoint/database';
import { FlowsRepository } from '../flows/flows.repository.js';
import { check } from '../input-checks/input-checks.js';
import { FlowStatsRepository } from './flow-stats.repository.js';

/**
 * Results of one flow (seed 000 "API … statistics"): enrollments by outcome, stopped ones by reason,
 * sends by status, and replies. A reply counts when it came after the enrollment's first send (the
 * stop paths write every reply on the timeline with `cause: reply`); the time to reply is from that
 * first send to the first reply after it.
 */
@Injectable()
export class FlowStatsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly flows: FlowsRepository,
    private readonly stats: FlowStatsRepository,
  ) {}

  /** @throws AppError not_found (no such flow in the organization) */
  async get(input: FlowRef): Promise<FlowStatsView> {
    check(input).uuid('organization_id').uuid('flow_id').done();
    const db = poolOf(this.uow.dataSource);
    if (!(await this.flows.exists(db, input.organization_id, input.flow_id))) throw notFound('flow');
    const r = await this.stats.counts(db, input.organization_id, input.flow_id);
    return {
      flow_id: input.flow_id,
      enrolled: r.enrolled,
      active: r.active,
      completed: r.completed,
      stopped: r.stopped,
      sends: r.sends,
      enrollments_with_send: r.enrollments_with_send,
      replied: r.replied,
      reply_rate: r.enrollments_with_send ? Math.round((r.replied / r.enrollments_with_send) * 10_000) / 10_000 : null,
      median_time_to_reply_seconds: r.median_seconds === null ? null : Math.round(r.median_seconds),
    };
  }
}
