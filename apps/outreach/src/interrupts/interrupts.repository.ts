import { Injectable } from '@nestjs/common';
import type { OutreachEnrollmentStatus, PersonKind } from '@touchpoint/contracts';
import { type Queryable, rowsOf, type Tx } from '@touchpoint/database';

/** The enrollment a reply belongs to, with what decides whether its decision event goes out. */
export interface CorrelatedEnrollment {
  action_id: string;
  enrollment_id: string;
  enrollment_status: OutreachEnrollmentStatus;
  person_kind: PersonKind;
  person_id: string;
  campaign_active: boolean;
  outreach_stopped: boolean;
}

/** A live enrollment and its person, for the opt-out and bounce match. */
export interface LiveEnrollment {
  id: string;
  person_kind: PersonKind;
  person_id: string;
}

/** The statuses of an action that went (or may have gone) out: a reply to it is ours (seed 003 §4.7). */
const SENT_ACTION = `(a.status = 'executed' OR (a.status = 'failed' AND a.outcome_unknown))`;

/** Every SQL statement of the reply interrupt, the opt-out and the bounce (seed 003 §4.7). */
@Injectable()
export class InterruptsRepository {
  /**
   * The action an inbound message answers, and its enrollment (seed 003 §4.7, the correlation).
   * - Email: only the enrollment's Outreach threads. A provider id we sent (`ids`: the message's
   *   in-reply-to or thread id, matched against `provider_message_id` through the index on
   *   (organization_id, provider_message_id)), or a thread learned from an earlier answer to one of
   *   our emails (`email_threads`, see `learnThread`). An email the person starts on a new thread
   *   is outside Outreach, even from the same address: `conversationId` is not read.
   * - LinkedIn: our ids in the chat (the invitation or message id we sent), else the person's
   *   LinkedIn conversation (messaging keeps one chat per contact and account).
   * A live enrollment wins over an ended one; a provider-id match over the rest; the newest send last.
   */
  async correlate(db: Queryable, organizationId: string, channel: 'email' | 'linkedin', ids: string[], conversationId: string | null, threadId: string | null): Promise<CorrelatedEnrollment | null> {
    const email = channel === 'email';
    const types = email ? ['email'] : ['linkedin_connection', 'linkedin_message'];
    const [row] = await rowsOf<CorrelatedEnrollment>(
      db,
      `SELECT a.id AS action_id, e.id AS enrollment_id, e.status AS enrollment_status, e.person_kind, e.person_id,
              c.status = 'active' AS campaign_active, s.outreach_stopped_at IS NOT NULL AS outreach_stopped
         FROM proposed_actions a
         JOIN enrollments e ON e.id = a.enrollment_id
         JOIN campaigns c ON c.id = a.campaign_id
         LEFT JOIN organization_settings s ON s.organization_id = a.organization_id
        WHERE a.organization_id = $1 AND a.type = ANY($2::text[]) AND ${SENT_ACTION}
          AND (a.provider_message_id = ANY($3::text[])
               OR ($4::text IS NOT NULL AND a.conversation_id = $4)
               OR a.id IN (SELECT t.action_id FROM email_threads t WHERE t.organization_id = $1 AND t.thread_id = $5))
        ORDER BY (e.status <> 'ended') DESC, (a.provider_message_id = ANY($3::text[])) DESC, a.executed_at DESC NULLS LAST, a.id
        LIMIT 1`,
      [organizationId, types, ids, email ? null : conversationId, email ? threadId : null],
    );
    return row ?? null;
  }

  /**
   * Remembers that `threadId` is an Outreach thread of `actionId` (an inbound in it answered that
   * email), so a later message of the thread that names none of our ids still correlates. The
   * first action to claim a thread keeps it. In a savepoint: it is a side write of the interrupt
   * and of the opt-out, whose own writes must commit even when this one fails.
   * @returns false when the row could not be written (rolled back to the savepoint)
   */
  async learnThread(tx: Tx, organizationId: string, threadId: string, actionId: string): Promise<boolean> {
    try {
      await tx.savepoint(() => tx.query(`INSERT INTO email_threads (organization_id, thread_id, action_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [organizationId, threadId, actionId]));
      return true;
    } catch {
      return false;
    }
  }

  /** Whether a decision is already saved for this cause (seed 003 §4.7: the guard against a second bump). */
  async decisionSaved(db: Queryable, enrollmentId: string, eventId: string): Promise<boolean> {
    const rows = await rowsOf(db, `SELECT 1 FROM decisions WHERE enrollment_id = $1 AND trigger_event_id = $2 AND outcome = 'saved'`, [enrollmentId, eventId]);
    return rows.length > 0;
  }

  /**
   * A bounce closes the email channel only (seed 003 §4.7): pending and approved EMAIL actions are
   * invalidated; LinkedIn drafts stay, and a sending email is left to the sender's own check.
   */
  async invalidateEmailActions(db: Queryable, enrollmentId: string, reason: string, now: Date): Promise<string[]> {
    const rows = await rowsOf<{ id: string }>(
      db,
      `UPDATE proposed_actions SET status = 'invalidated', invalidated_reason = $2, next_attempt_at = NULL, updated_at = $3
        WHERE enrollment_id = $1 AND type = 'email' AND status IN ('pending_approval', 'approved') RETURNING id`,
      [enrollmentId, reason, now],
    );
    return rows.map((r) => r.id);
  }
}
