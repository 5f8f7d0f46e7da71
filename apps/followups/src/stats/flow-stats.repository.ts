import { Injectable } from '@nestjs/common';
import type { FlowStatsView } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** One flow's counts as `FlowStatsRepository.counts` reads them: the view's counts, and the median in seconds unrounded. */
export type FlowStatsRow = Pick<FlowStatsView, 'enrolled' | 'active' | 'completed' | 'stopped' | 'sends' | 'enrollments_with_send' | 'replied'> & { median_seconds: number | null };

/** The SQL of flow statistics (seed 000 "API … statistics"): one read over the flow's enrollments. */
@Injectable()
export class FlowStatsRepository {
  /**
   * Counts of one flow's enrollments, sends and replies, in one statement. A reply counts when the
   * stop paths wrote it on the timeline (`cause: reply`) at or after the enrollment's first send.
   */
  async counts(db: Queryable, organizationId: string, flowId: string): Promise<FlowStatsRow> {
    const [row] = await rowsOf<FlowStatsRow>(
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
              (SELECT count(*) FROM first_send)::int AS enrollments_with_send,
              (SELECT count(*) FROM first_reply)::int AS replied,
              (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM fr.at - fs.at)) FROM first_reply fr JOIN first_send fs USING (enrollment_id))::float8 AS median_seconds`,
      [flowId, organizationId],
    );
    return row!;
  }
}
