import { Injectable } from '@nestjs/common';
import type { FollowupEnrollmentStatus } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

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
    return rowsOf<TouchedEnrollment>(
      db,
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
    return rowsOf<TouchedEnrollment>(
      db,
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
  async stop(db: Queryable, where: { organizationId: string; contactId?: string; flowId?: string; conversationId?: string }, status: 'completed' | 'cancelled', reason: string, now: Date): Promise<TouchedEnrollment[]> {
    const params: unknown[] = [where.organizationId, status, reason, now];
    const filters = ['organization_id = $1', `status IN ${LIVE}`];
    if (where.contactId) filters.push(`contact_id = $${params.push(where.contactId)}`);
    if (where.flowId) filters.push(`flow_id = $${params.push(where.flowId)}`);
    if (where.conversationId) filters.push(`(conversation_id = $${params.push(where.conversationId)} OR conversation_id IS NULL)`);
    return rowsOf<TouchedEnrollment>(
      db,
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
    return rowsOf<TouchedEnrollment>(
      db,
      `UPDATE enrollments SET status = 'active', reason = NULL, next_run_at = $3, sender_unavailable_since = NULL, revision = revision + 1, updated_at = $3
        WHERE ${filters.join(' AND ')} ${RETURNING}`,
      params,
    );
  }

  /**
   * The follow-up sends of `scope` still `queued` (handed to messaging and the dispatcher, no
   * outcome yet), whatever their enrollment's status: an enrollment whose last step was a send is
   * `completed` as soon as that send is queued, and its send must still lose to the reply (seed 000
   * "Stop paths and ordering"). One statement on `effects_queued_sends_idx`; the enrollment is
   * joined by its key only to read the stop flags copied onto it. Run it after the statement that
   * updated the contact row: a release of the contact that committed before then is seen here, and
   * none can commit a send after it (ReleaseRepository.claimDue skips a locked contact).
   */
  async queuedSends(db: Queryable, scope: QueuedSendScope): Promise<QueuedSend[]> {
    const params: unknown[] = [scope.organizationId];
    const filters = [`f.organization_id = $1`, `f.kind = 'send'`, `f.status = 'queued'`, `f.idempotency_key IS NOT NULL`];
    if (scope.flowId) filters.push(`e.flow_id = $${params.push(scope.flowId)}`);
    else filters.push(`f.contact_id = $${params.push(scope.contactId)}`);
    switch (scope.only) {
      case 'cancel_on_reply':
        // An enrollment the reply moved on to its `replied` exit keeps its sends: the flow answers
        // the reply itself. A reply older than what the enrollment has seen (it began after the
        // reply, whose event came late) is not a reply to it: the same rule as applyReply.
        filters.push(`e.cancel_on_reply`, `e.status NOT IN ('active', 'waiting_reply')`, `(e.reply_seen_at IS NULL OR e.reply_seen_at <= $${params.push(scope.at)})`);
        break;
      case 'handoff':
        filters.push(`e.handoff_policy <> 'continue'`, `(e.handoff_seen_at IS NULL OR e.handoff_seen_at <= $${params.push(scope.at)})`);
        break;
      case 'conversation':
        filters.push(`(e.conversation_id = $${params.push(scope.conversationId)} OR e.conversation_id IS NULL)`);
        break;
      case undefined:
        break;
    }
    return rowsOf<QueuedSend>(
      db,
      `SELECT f.id, f.idempotency_key, f.enrollment_id, f.node_id, e.status AS enrollment_status
         FROM effects f JOIN enrollments e ON e.id = f.enrollment_id
        WHERE ${filters.join(' AND ')}
        ORDER BY f.created_at`,
      params,
    );
  }
}

/** A follow-up send still queued: what `outbox.cancel` needs, and where its timeline is. */
export interface QueuedSend {
  id: string;
  idempotency_key: string;
  enrollment_id: string;
  node_id: string;
  enrollment_status: FollowupEnrollmentStatus;
}

/**
 * Which queued sends a stop event takes back (seed 000 "Stop hooks"): the contact's (opt-out,
 * erasure: all of them; a reply: those of enrollments that stop on reply; a human message: those
 * whose handoff policy is not `continue`; a resolution: those of that conversation or of none), or
 * the flow's (archived).
 */
export type QueuedSendScope = { organizationId: string } & (
  | { contactId: string; flowId?: undefined; only?: undefined }
  /** `at`: when the reply or human message was written (the event's `occurred_at`). */
  | { contactId: string; flowId?: undefined; only: 'cancel_on_reply' | 'handoff'; at: Date }
  | { contactId: string; flowId?: undefined; only: 'conversation'; conversationId: string }
  | { flowId: string; contactId?: undefined; only?: undefined }
);
