import { Injectable } from '@nestjs/common';
import type { ActionStatus, ActionView, DraftPayload, OutboundActionType, RejectThen } from '@touchpoint/contracts';
import { type Queryable, iso, rowsOf } from '@touchpoint/database';

/** A row of `proposed_actions`; the columns its view shows as they are come from `ActionView`. */
export interface ActionRow extends Pick<ActionView, 'organization_id' | 'enrollment_id' | 'decision_id' | 'type' | 'status' | 'draft_payload' | 'approved_payload' | 'approved_hash' | 'approved_by' | 'reject_reason' | 'reject_then' | 'rejected_by'> {
  id: string;
  campaign_id: string;
  approved_at: Date | null;
  next_attempt_at: Date | null;
  send_attempt: number;
  rejected_at: Date | null;
  invalidated_reason: string | null;
  executed_at: Date | null;
  message_id: string | null;
  conversation_id: string | null;
  provider_message_id: string | null;
  failure_reason: string | null;
  outcome_unknown: boolean;
  run_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export const toActionView = (r: ActionRow): ActionView => ({
  id: r.id,
  organization_id: r.organization_id,
  enrollment_id: r.enrollment_id,
  decision_id: r.decision_id,
  type: r.type,
  status: r.status,
  draft_payload: r.draft_payload,
  approved_payload: r.approved_payload,
  approved_hash: r.approved_hash,
  approved_by: r.approved_by,
  approved_at: iso(r.approved_at),
  next_attempt_at: iso(r.next_attempt_at),
  rejected_by: r.rejected_by,
  rejected_at: iso(r.rejected_at),
  reject_reason: r.reject_reason,
  reject_then: r.reject_then,
  executed_at: iso(r.executed_at),
  message_id: r.message_id,
  provider_message_id: r.provider_message_id,
  failure_reason: r.failure_reason,
  outcome_unknown: r.outcome_unknown,
  created_at: iso(r.created_at)!,
});

/** Every SQL statement of proposed actions. Status moves are conditional writes (seed 003 §5). */
@Injectable()
export class ActionsRepository {
  async find(db: Queryable, organizationId: string, id: string): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(db, `SELECT * FROM proposed_actions WHERE organization_id = $1 AND id = $2`, [organizationId, id]);
    return row ?? null;
  }

  async findById(db: Queryable, id: string): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(db, `SELECT * FROM proposed_actions WHERE id = $1`, [id]);
    return row ?? null;
  }

  async findByDecision(db: Queryable, decisionId: string): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(db, `SELECT * FROM proposed_actions WHERE decision_id = $1`, [decisionId]);
    return row ?? null;
  }

  /**
   * The latest executed LinkedIn invitation of a live enrollment (active or needing contact data)
   * to the person `providerId` (or whose profile URL holds `/in/<publicIdentifier>`), sent from a
   * campaign of the LinkedIn sender `senderId`; with whether its campaign is active and whether
   * outreach is stopped for the organization. Null when none.
   */
  async acceptedConnection(db: Queryable, organizationId: string, senderId: string, providerId: string, publicIdentifier: string | null): Promise<{ action_id: string; enrollment_id: string; campaign_active: boolean; stopped: boolean } | null> {
    const [found] = await rowsOf<{ action_id: string; enrollment_id: string; campaign_active: boolean; stopped: boolean }>(
      db,
      `SELECT a.id AS action_id, a.enrollment_id, c.status = 'active' AS campaign_active, s.outreach_stopped_at IS NOT NULL AS stopped
         FROM proposed_actions a
         JOIN enrollments e ON e.id = a.enrollment_id AND e.status IN ('active', 'needs_contact_data')
         JOIN campaigns c ON c.id = a.campaign_id AND c.linkedin_sender_id = $2
         LEFT JOIN organization_settings s ON s.organization_id = a.organization_id
        WHERE a.organization_id = $1 AND a.type = 'linkedin_connection' AND a.status = 'executed'
          AND (a.approved_payload->'to'->>'provider_id' = $3
               OR ($4::text IS NOT NULL AND lower(a.approved_payload->'to'->>'url') LIKE '%/in/' || $4 || '%'))
        ORDER BY a.executed_at DESC NULLS LAST
        LIMIT 1`,
      [organizationId, senderId, providerId, publicIdentifier],
    );
    return found ?? null;
  }

  async ofEnrollment(db: Queryable, enrollmentId: string): Promise<ActionRow[]> {
    return rowsOf<ActionRow>(db, `SELECT * FROM proposed_actions WHERE enrollment_id = $1 ORDER BY created_at DESC, id DESC`, [enrollmentId]);
  }

  /**
   * Invalidates the enrollment's actions in `statuses` (a reply, an exit, an archive, a newer
   * draft), except `exceptId`. A `sending` action is never touched: its send goes on (seed 003 §4.7).
   */
  async invalidate(db: Queryable, enrollmentId: string, statuses: ActionStatus[], reason: string, now: Date, exceptId: string | null = null): Promise<string[]> {
    const rows = await rowsOf<{ id: string }>(
      db,
      `UPDATE proposed_actions SET status = 'invalidated', invalidated_reason = $3, next_attempt_at = NULL, updated_at = $4
        WHERE enrollment_id = $1 AND status = ANY($2::text[]) AND ($5::uuid IS NULL OR id <> $5) RETURNING id`,
      [enrollmentId, statuses, reason, now, exceptId],
    );
    return rows.map((r) => r.id);
  }

  /** Draft save step 1 (seed 003 §4.4): an older pending action of the enrollment is invalidated. */
  async invalidateOlderPending(db: Queryable, enrollmentId: string, decisionId: string, now: Date): Promise<string[]> {
    const rows = await rowsOf<{ id: string }>(
      db,
      `UPDATE proposed_actions SET status = 'invalidated', invalidated_reason = 'newer_draft', updated_at = $3
        WHERE enrollment_id = $1 AND status = 'pending_approval' AND decision_id <> $2 RETURNING id`,
      [enrollmentId, decisionId, now],
    );
    return rows.map((r) => r.id);
  }

  async invalidateOfCampaign(db: Queryable, campaignId: string, reason: string, now: Date): Promise<void> {
    await db.query(
      `UPDATE proposed_actions SET status = 'invalidated', invalidated_reason = $2, next_attempt_at = NULL, updated_at = $3
        WHERE campaign_id = $1 AND status IN ('pending_approval', 'approved')`,
      [campaignId, reason, now],
    );
  }

  /**
   * Inserts the draft as `pending_approval`; a retried step finds the row of its decision
   * (decision_id is unique). Throws the unique violation of `proposed_actions_one_pending` when
   * another pending action of the enrollment won the slot.
   */
  async insertPending(db: Queryable, r: { organization_id: string; enrollment_id: string; campaign_id: string; decision_id: string; type: OutboundActionType; draft: DraftPayload; run_id: string | null; now: Date }): Promise<ActionRow> {
    const [row] = await rowsOf<ActionRow>(
      db,
      `INSERT INTO proposed_actions (organization_id, enrollment_id, campaign_id, decision_id, type, status, draft_payload, run_id, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'pending_approval', $6, $7, $8, $8)
       ON CONFLICT (decision_id) DO NOTHING RETURNING *`,
      [r.organization_id, r.enrollment_id, r.campaign_id, r.decision_id, r.type, JSON.stringify(r.draft), r.run_id, r.now],
    );
    return row ?? (await this.findByDecision(db, r.decision_id))!;
  }

  /** Marks one action invalidated if it is still in `statuses`. */
  async invalidateOne(db: Queryable, id: string, statuses: ActionStatus[], reason: string, now: Date): Promise<boolean> {
    const rows = await rowsOf<{ id: string }>(
      db,
      `UPDATE proposed_actions SET status = 'invalidated', invalidated_reason = $3, next_attempt_at = NULL, updated_at = $4
        WHERE id = $1 AND status = ANY($2::text[]) RETURNING id`,
      [id, statuses, reason, now],
    );
    return rows.length > 0;
  }

  /** Approve (seed 003 §4.5 step 5): only from `pending_approval`. Null when the action moved on. */
  async approve(db: Queryable, organizationId: string, id: string, a: { payload: Record<string, unknown>; hash: string; by: string; now: Date }): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(
      db,
      `UPDATE proposed_actions SET status = 'approved', approved_payload = $3, approved_hash = $4, approved_by = $5, approved_at = $6, next_attempt_at = $6, updated_at = $6
        WHERE organization_id = $1 AND id = $2 AND status = 'pending_approval' RETURNING *`,
      [organizationId, id, JSON.stringify(a.payload), a.hash, a.by, a.now],
    );
    return row ?? null;
  }

  /** Reject (seed 003 §4.5 step 3): only from `pending_approval`. */
  async reject(db: Queryable, organizationId: string, id: string, r: { then: RejectThen; reason: string | null; by: string; now: Date }): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(
      db,
      `UPDATE proposed_actions SET status = 'rejected', reject_then = $3, reject_reason = $4, rejected_by = $5, rejected_at = $6, updated_at = $6
        WHERE organization_id = $1 AND id = $2 AND status = 'pending_approval' RETURNING *`,
      [organizationId, id, r.then, r.reason, r.by, r.now],
    );
    return row ?? null;
  }

  /** A paused campaign or stopped organization holds an approved action (seed 003 §4.6). */
  async hold(db: Queryable, id: string, nextAttemptAt: Date, now: Date): Promise<void> {
    await db.query(`UPDATE proposed_actions SET next_attempt_at = $2, updated_at = $3 WHERE id = $1 AND status = 'approved'`, [id, nextAttemptAt, now]);
  }

  /**
   * The claim, `approved → sending`: the send key (seed 003 §4.6 step 2). Null when the action was
   * not approved any more. Counts the attempt, which names the messaging idempotency key.
   */
  async claim(db: Queryable, id: string, now: Date): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(
      db,
      `UPDATE proposed_actions SET status = 'sending', next_attempt_at = NULL, send_attempt = send_attempt + 1, updated_at = $2
        WHERE id = $1 AND status = 'approved' RETURNING *`,
      [id, now],
    );
    return row ?? null;
  }

  /** `sending → executed` (or a settled ambiguous `failed → executed`), with what the provider said. */
  async markExecuted(db: Queryable, id: string, r: { executed_at: Date; message_id: string | null; conversation_id: string | null; provider_message_id: string | null }): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(
      db,
      `UPDATE proposed_actions SET status = 'executed', executed_at = $2, message_id = COALESCE($3, message_id), conversation_id = COALESCE($4, conversation_id),
              provider_message_id = COALESCE($5, provider_message_id), updated_at = $2
        WHERE id = $1 AND (status = 'sending' OR (status = 'failed' AND outcome_unknown)) RETURNING *`,
      [id, r.executed_at, r.message_id, r.conversation_id, r.provider_message_id],
    );
    return row ?? null;
  }

  /** `sending → failed`; `outcome_unknown` for an ambiguous send (never sent again, seed 003 §4.6). */
  async markFailed(db: Queryable, id: string, r: { reason: string; outcome_unknown: boolean; message_id: string | null; conversation_id: string | null; now: Date }): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(
      db,
      `UPDATE proposed_actions SET status = 'failed', failure_reason = $2, outcome_unknown = $3, message_id = COALESCE($4, message_id),
              conversation_id = COALESCE($5, conversation_id), executed_at = CASE WHEN $3 THEN $6 ELSE executed_at END, updated_at = $6
        WHERE id = $1 AND status = 'sending' RETURNING *`,
      [id, r.reason, r.outcome_unknown, r.message_id, r.conversation_id, r.now],
    );
    return row ?? null;
  }

  /** `sending → invalidated`: the sender refused it (suppressed, already connected). */
  async markRefused(db: Queryable, id: string, reason: string, now: Date): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(db, `UPDATE proposed_actions SET status = 'invalidated', invalidated_reason = $2, failure_reason = $2, updated_at = $3 WHERE id = $1 AND status = 'sending' RETURNING *`, [id, reason, now]);
    return row ?? null;
  }

  /** `sending → approved`: nothing was sent (held by the sender); tried again at `nextAttemptAt`. */
  async release(db: Queryable, id: string, reason: string, nextAttemptAt: Date, now: Date): Promise<ActionRow | null> {
    const [row] = await rowsOf<ActionRow>(db, `UPDATE proposed_actions SET status = 'approved', failure_reason = $2, next_attempt_at = $3, updated_at = $4 WHERE id = $1 AND status = 'sending' RETURNING *`, [id, reason, nextAttemptAt, now]);
    return row ?? null;
  }
}
