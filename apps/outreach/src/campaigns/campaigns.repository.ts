import { Injectable } from '@nestjs/common';
import type { CampaignStatus, CampaignView, OutreachSettingsView } from '@touchpoint/contracts';
import { type Queryable, iso, rowsOf } from '@touchpoint/database';

/** A row of `campaigns`; the columns its view shows as they are come from `CampaignView`. */
export interface CampaignRow extends Pick<CampaignView, 'organization_id' | 'name' | 'goal' | 'status' | 'allowed_channels' | 'max_touches' | 'followup_min_days' | 'followup_max_days' | 'email_sender_id' | 'linkedin_sender_id'> {
  id: string;
  created_at: Date;
  updated_at: Date;
  paused_at: Date | null;
  archived_at: Date | null;
  live_enrollments?: number;
}

export const toCampaignView = (r: CampaignRow): CampaignView => ({
  id: r.id,
  organization_id: r.organization_id,
  name: r.name,
  goal: r.goal,
  status: r.status,
  allowed_channels: r.allowed_channels,
  max_touches: r.max_touches,
  followup_min_days: r.followup_min_days,
  followup_max_days: r.followup_max_days,
  email_sender_id: r.email_sender_id,
  linkedin_sender_id: r.linkedin_sender_id,
  live_enrollments: Number(r.live_enrollments ?? 0),
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
  paused_at: iso(r.paused_at),
  archived_at: iso(r.archived_at),
});

const LIVE_COUNT = `(SELECT count(*) FROM enrollments e WHERE e.campaign_id = c.id AND e.status IN ('active', 'needs_contact_data'))::int AS live_enrollments`;

/** Every SQL statement of campaigns and the organization-wide stop; all scoped by organization. */
@Injectable()
export class CampaignsRepository {
  async insert(db: Queryable, r: Omit<CampaignRow, 'id' | 'status' | 'updated_at' | 'paused_at' | 'archived_at'>): Promise<CampaignRow> {
    const [row] = await rowsOf<CampaignRow>(
      db,
      `INSERT INTO campaigns (organization_id, name, goal, status, allowed_channels, max_touches, followup_min_days, followup_max_days,
                              email_sender_id, linkedin_sender_id, created_at, updated_at)
       VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $8, $9, $10, $10) RETURNING *, 0 AS live_enrollments`,
      [r.organization_id, r.name, r.goal, r.allowed_channels, r.max_touches, r.followup_min_days, r.followup_max_days, r.email_sender_id, r.linkedin_sender_id, r.created_at],
    );
    return row!;
  }

  async find(db: Queryable, organizationId: string, id: string, lock = false): Promise<CampaignRow | null> {
    const [row] = await rowsOf<CampaignRow>(db, lock ? `SELECT c.* FROM campaigns c WHERE c.organization_id = $1 AND c.id = $2 FOR UPDATE` : `SELECT c.*, ${LIVE_COUNT} FROM campaigns c WHERE c.organization_id = $1 AND c.id = $2`, [organizationId, id]);
    return row ?? null;
  }

  async list(db: Queryable, organizationId: string, status: CampaignStatus | undefined): Promise<CampaignRow[]> {
    return rowsOf<CampaignRow>(db, `SELECT c.*, ${LIVE_COUNT} FROM campaigns c WHERE c.organization_id = $1 AND ($2::text IS NULL OR c.status = $2) ORDER BY c.created_at DESC, c.id DESC`, [organizationId, status ?? null]);
  }

  /** Moves the status only from one of `from` (a conditional write: a repeat finds 0 rows). */
  async setStatus(db: Queryable, organizationId: string, id: string, from: CampaignStatus[], to: CampaignStatus, now: Date): Promise<CampaignRow | null> {
    const [row] = await rowsOf<CampaignRow>(
      db,
      `UPDATE campaigns SET status = $4, updated_at = $5,
              paused_at = CASE WHEN $4 = 'paused' THEN $5 ELSE paused_at END,
              archived_at = CASE WHEN $4 = 'archived' THEN $5 ELSE archived_at END
        WHERE organization_id = $1 AND id = $2 AND status = ANY($3::text[]) RETURNING *`,
      [organizationId, id, from, to, now],
    );
    return row ?? null;
  }

  /** Deletes a campaign that never had an enrollment (seed 003 §5); false when it had one. */
  async deleteIfNeverEnrolled(db: Queryable, organizationId: string, id: string): Promise<boolean> {
    const rows = await rowsOf<{ id: string }>(db, `DELETE FROM campaigns c WHERE c.organization_id = $1 AND c.id = $2 AND NOT EXISTS (SELECT 1 FROM enrollments e WHERE e.campaign_id = c.id) RETURNING c.id`, [organizationId, id]);
    return rows.length > 0;
  }

  async settings(db: Queryable, organizationId: string): Promise<OutreachSettingsView> {
    const [row] = await rowsOf<{ outreach_stopped_at: Date | null }>(db, `SELECT outreach_stopped_at FROM organization_settings WHERE organization_id = $1`, [organizationId]);
    return { organization_id: organizationId, outreach_stopped_at: iso(row?.outreach_stopped_at) };
  }

  /** Sets or clears the organization-wide stop; a stop that is already on keeps its first instant. */
  async setStopped(db: Queryable, organizationId: string, stopped: boolean, now: Date): Promise<OutreachSettingsView> {
    const [row] = await rowsOf<{ outreach_stopped_at: Date | null }>(
      db,
      `INSERT INTO organization_settings (organization_id, outreach_stopped_at, updated_at) VALUES ($1, CASE WHEN $2 THEN $3::timestamptz END, $3)
       ON CONFLICT (organization_id) DO UPDATE
         SET outreach_stopped_at = CASE WHEN $2 THEN COALESCE(organization_settings.outreach_stopped_at, $3::timestamptz) END, updated_at = $3
       RETURNING outreach_stopped_at`,
      [organizationId, stopped, now],
    );
    return { organization_id: organizationId, outreach_stopped_at: iso(row?.outreach_stopped_at) };
  }
}
