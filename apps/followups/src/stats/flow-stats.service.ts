import { Injectable } from '@nestjs/common';
import type { FlowRef, FlowStatsView } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { poolOf, rowsOf } from '@touchpoint/database';
import { check, notFound } from '../requests/request-checks.js';

/**
 * Results of one flow (seed 000 "API … statistics"): enrollments by outcome, stopped ones by reason,
 * sends by status, and replies. A reply counts when it came after the enrollment's first send (the
 * stop paths write every reply on the timeline with `cause: reply`); the time to reply is from that
 * first send to the first reply after it.
 */
@Injectable()
export class FlowStatsService {
  constructor(private readonly uow: UnitOfWork) {}

  /** @throws AppError not_found (no such flow in the organization) */
  async get(input: FlowRef): Promise<FlowStatsView> {
    check(input).uuid('organization_id').uuid('flow_id').done();
    const db = poolOf(this.uow.dataSource);
    const [flow] = await rowsOf(db, `SELECT 1 FROM flows WHERE id = $1 AND organization_id = $2`, [input.flow_id, input.organization_id]);
    if (!flow) throw notFound('flow');
    const [row] = await rowsOf<{
      enrolled: number;
      active: number;
      completed: number;
      stopped: Record<string, number>;
      sends: Record<string, number>;
      with_send: number;
      replied: number;
      median: number | null;
    }>(
      db,
      `WITH e AS (SELECT id, status, reason FROM enrollments WHERE flow_id = $1 AND organization_id = $2),
       first_send AS (
         SELECT enrollment_id, min(created_at) AS at FROM effects
          WHERE kind = 'send' AND status IN ('queued', 'sent', 'uncertain') AND enrollment_id IN (SELECT id FROM e)
          GROUP BY enrollment_id),
       first_reply AS (
         SELECT ev.enrollment_id, min(ev.created_at) AS at FROM enrollment_events ev JOIN first_send fs ON fs.enrollment_id = ev.enrollment_id
          WHERE ev.data ->> 'cause' = 'reply' AND ev.created_at >= fs.at
          GROUP BY ev.enrollment_id)
       SELECT (SELECT count(*) FROM e)::int AS enrolled,
              (SELECT count(*) FROM e WHERE status IN ('active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual'))::int AS active,
              (SELECT count(*) FROM e WHERE status = 'completed')::int AS completed,
              (SELECT coalesce(jsonb_object_agg(reason, n), '{}') FROM (SELECT coalesce(reason, 'unknown') AS reason, count(*)::int AS n FROM e WHERE status IN ('cancelled', 'dead') GROUP BY 1) s) AS stopped,
              (SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (SELECT status, count(*)::int AS n FROM effects WHERE kind = 'send' AND enrollment_id IN (SELECT id FROM e) GROUP BY 1) s) AS sends,
              (SELECT count(*) FROM first_send)::int AS with_send,
              (SELECT count(*) FROM first_reply)::int AS replied,
              (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM fr.at - fs.at)) FROM first_reply fr JOIN first_send fs USING (enrollment_id))::float8 AS median`,
      [input.flow_id, input.organization_id],
    );
    const r = row!;
    return {
      flow_id: input.flow_id,
      enrolled: r.enrolled,
      active: r.active,
      completed: r.completed,
      stopped: r.stopped,
      sends: r.sends,
      enrollments_with_send: r.with_send,
      replied: r.replied,
      reply_rate: r.with_send ? Math.round((r.replied / r.with_send) * 10_000) / 10_000 : null,
      median_time_to_reply_seconds: r.median === null ? null : Math.round(r.median),
    };
  }
}
