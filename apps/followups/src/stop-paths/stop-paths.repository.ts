import { Injectable } from '@nestjs/common';
import type { FollowupEnrollmentStatus } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '../requests/queryable.js';

const LIVE = `('active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual')`;

/** What a stop path learns of each enrollment it touched. */
export interface TouchedEnrollment {
  id: string;
  organization_id: string;
  flow_id: string;
  contact_id: string;
  node_id: string | null;
  status: FollowupEnrollmentStatus;
  reason: string | null;
  inflight_effect_id: string | null;
}

const RETURNING = `RETURNING id, organization_id, flow_id, contact_id, node_id, status, reason, inflight_effect_id`;

/**
 * The stop paths' statements (seed 000 "Stop flags are copied onto each enrollment, so every stop
 * path is one indexed UPDATE … RETURNING on (contact_id)"). Each runs in the transaction that
 * records the event, after the contact row was updated (which is what makes a release that wants
 * the contact give up: see ReleaseRepository.claimDue).
 */
@Injectable()
export class StopPathsRepository {
  /**
   * A reply: an enrollment waiting for it takes its `replied` exit at once; one that stops on reply
   * completes with reason `replied`; the others only note the text (for `match_reply`).
   */
  async applyReply(db: Queryable, organizationId: string, contactId: string, text: string | null, at: Date, now: Date): Promise<TouchedEnrollment[]> {
    return rowsOf<TouchedEnrollment>(db, 
      `UPDATE enrollments SET
         status = CASE WHEN status = 'waiting_reply' THEN 'active' WHEN cancel_on_reply THEN 'completed' ELSE status END,
         reason = CASE WHEN status = 'waiting_reply' THEN reason WHEN cancel_on_reply THEN 'replied' ELSE reason END,
         pending_exit = CASE WHEN status = 'waiting_reply' THEN 'branch:replied' ELSE pending_exit END,
         next_run_at = CASE WHEN status = 'waiting_reply' THEN $5 WHEN cancel_on_reply THEN NULL ELSE next_run_at END,
         finished_at = CASE WHEN status <> 'waiting_reply' AND cancel_on_reply THEN $5 ELSE finished_at END,
         last_reply_text = $3,
         reply_seen_at = greatest(reply_seen_at, $4),
         revision = revision + 1,
         updated_at = $5
       WHERE organization_id = $1 AND contact_id = $2 AND status IN ${LIVE}
         AND (reply_seen_at IS NULL OR reply_seen_at < $4)
       ${RETURNING}`,
      [organizationId, contactId, text, at, now],
    );
  }

  /** A human took over: pause, stop or leave each live enrollment per its `handoff_policy`. */
  async applyHandoff(db: Queryable, organizationId: string, contactId: string, at: Date, now: Date): Promise<TouchedEnrollment[]> {
    return rowsOf<TouchedEnrollment>(db, 
      `UPDATE enrollments SET
         status = CASE handoff_policy WHEN 'stop' THEN 'cancelled' WHEN 'pause' THEN (CASE WHEN status = 'paused_manual' THEN status ELSE 'paused_handoff' END) ELSE status END,
         reason = CASE handoff_policy WHEN 'stop' THEN 'handoff' WHEN 'pause' THEN 'handoff' ELSE reason END,
         finished_at = CASE WHEN handoff_policy = 'stop' THEN $4 ELSE finished_at END,
         next_run_at = CASE WHEN handoff_policy = 'stop' THEN NULL ELSE next_run_at END,
         handoff_seen_at = greatest(handoff_seen_at, $3),
         revision = revision + 1,
         updated_at = $4
       WHERE organization_id = $1 AND contact_id = $2 AND status IN ${LIVE}
         AND handoff_policy <> 'continue'
         AND (handoff_seen_at IS NULL OR handoff_seen_at < $3)
       ${RETURNING}`,
      [organizationId, contactId, at, now],
    );
  }

  /** Ends live enrollments matching `where` with `status` and `reason`. */
  async stop(
    db: Queryable,
    where: { organizationId: string; contactId?: string; flowId?: string; conversationId?: string },
    status: 'completed' | 'cancelled',
    reason: string,
    now: Date,
  ): Promise<TouchedEnrollment[]> {
    const params: unknown[] = [where.organizationId, status, reason, now];
    const filters = ['organization_id = $1', `status IN ${LIVE}`];
    if (where.contactId) filters.push(`contact_id = $${params.push(where.contactId)}`);
    if (where.flowId) filters.push(`flow_id = $${params.push(where.flowId)}`);
    if (where.conversationId) filters.push(`(conversation_id = $${params.push(where.conversationId)} OR conversation_id IS NULL)`);
    return rowsOf<TouchedEnrollment>(db, 
      `UPDATE enrollments SET status = $2, reason = $3, finished_at = $4, next_run_at = NULL, revision = revision + 1, updated_at = $4
        WHERE ${filters.join(' AND ')} ${RETURNING}`,
      params,
    );
  }

  /** Wakes enrollments parked (`dormente`) for `reason`: due now again. */
  async wakeParked(db: Queryable, where: { organizationId: string; flowId?: string }, reason: string, now: Date): Promise<TouchedEnrollment[]> {
    const params: unknown[] = [where.organizationId, reason, now];
    const filters = ['organization_id = $1', `status = 'dormente'`, 'reason = $2'];
    if (where.flowId) filters.push(`flow_id = $${params.push(where.flowId)}`);
    return rowsOf<TouchedEnrollment>(db, 
      `UPDATE enrollments SET status = 'active', reason = NULL, next_run_at = $3, sender_unavailable_since = NULL, revision = revision + 1, updated_at = $3
        WHERE ${filters.join(' AND ')} ${RETURNING}`,
      params,
    );
  }

  /** The keys of sends still queued among these effects (the ones `outbox.cancel` may still stop). */
  async queuedSendKeys(db: Queryable, effectIds: string[]): Promise<{ id: string; idempotency_key: string }[]> {
    if (effectIds.length === 0) return [];
    return rowsOf(db, `SELECT id, idempotency_key FROM effects WHERE id = ANY($1::uuid[]) AND kind = 'send' AND status = 'queued' AND idempotency_key IS NOT NULL`, [effectIds]);
  }
}
