import { Injectable } from '@nestjs/common';
import type { CampaignStatus, OutreachChannel, PersonKind } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';
import type { ActionRow } from './actions.repository.js';

/** An action with what a review and a send need from its enrollment, campaign and decision. */
export interface ActionContextRow extends ActionRow {
  e_status: string;
  e_context_version: number;
  e_touch_count: number;
  person_kind: PersonKind;
  person_id: string;
  c_name: string;
  c_status: CampaignStatus;
  c_max_touches: number;
  c_allowed_channels: OutreachChannel[];
  c_email_sender_id: string | null;
  c_linkedin_sender_id: string | null;
  d_rationale: string | null;
  d_objective: string | null;
  d_followup_days: number | null;
  d_reply_to_message_id: string | null;
  d_reply_to_text: string | null;
  stopped_at: Date | null;
}

const SELECT = `
  SELECT a.*, e.status AS e_status, e.context_version AS e_context_version, e.touch_count AS e_touch_count, e.person_kind, e.person_id,
         c.name AS c_name, c.status AS c_status, c.max_touches AS c_max_touches, c.allowed_channels AS c_allowed_channels,
         c.email_sender_id AS c_email_sender_id, c.linkedin_sender_id AS c_linkedin_sender_id,
         d.rationale AS d_rationale, d.objective AS d_objective, d.followup_days AS d_followup_days,
         d.reply_to_message_id AS d_reply_to_message_id, d.reply_to_text AS d_reply_to_text,
         s.outreach_stopped_at AS stopped_at
    FROM proposed_actions a
    JOIN enrollments e ON e.id = a.enrollment_id
    JOIN campaigns c ON c.id = a.campaign_id
    JOIN decisions d ON d.id = a.decision_id
    LEFT JOIN organization_settings s ON s.organization_id = a.organization_id`;

/** The joined reads of the review queue, approve and the execution recheck (always fresh). */
@Injectable()
export class ReviewRepository {
  async withContext(db: Queryable, organizationId: string, actionId: string): Promise<ActionContextRow | null> {
    const [row] = await rowsOf<ActionContextRow>(db, `${SELECT} WHERE a.organization_id = $1 AND a.id = $2`, [organizationId, actionId]);
    return row ?? null;
  }

  async withContextById(db: Queryable, actionId: string): Promise<ActionContextRow | null> {
    const [row] = await rowsOf<ActionContextRow>(db, `${SELECT} WHERE a.id = $1`, [actionId]);
    return row ?? null;
  }

  /** Pending actions of the organization, oldest first (seed 003 §4.5). */
  async queue(db: Queryable, organizationId: string, limit: number): Promise<ActionContextRow[]> {
    return rowsOf<ActionContextRow>(db, `${SELECT} WHERE a.organization_id = $1 AND a.status = 'pending_approval' ORDER BY a.created_at, a.id LIMIT $2`, [organizationId, limit]);
  }

  async queueTotal(db: Queryable, organizationId: string): Promise<number> {
    const [row] = await rowsOf<{ n: number }>(db, `SELECT count(*)::int AS n FROM proposed_actions WHERE organization_id = $1 AND status = 'pending_approval'`, [organizationId]);
    return row!.n;
  }
}
