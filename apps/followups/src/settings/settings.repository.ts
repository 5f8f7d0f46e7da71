import { Injectable } from '@nestjs/common';
import type { FollowupSettingsView } from '@touchpoint/contracts';
import { type Queryable, rowsOf, type Tx } from '@touchpoint/database';

/** Defaults of an organization that never saved its follow-up settings (revision 0). */
export const DEFAULT_FOLLOWUP_SETTINGS: Omit<FollowupSettingsView, 'customer_id' | 'updated_at'> = {
  send_window: { start_hour: 9, end_hour: 20, days: [1, 2, 3, 4, 5], timezone: 'UTC' },
  contact_daily_cap: 3,
  monthly_send_quota: null,
  consent_mode: 'none',
  consent_tag: 'opt_in',
  max_live_enrollments: null,
  retention_days: 90,
  approved_templates: [],
  followups_enabled: true,
  revision: 0,
};

type SettingsRow = {
  organization_id: string;
  send_window: FollowupSettingsView['send_window'];
  contact_daily_cap: number;
  monthly_send_quota: number | null;
  consent_mode: FollowupSettingsView['consent_mode'];
  consent_tag: string;
  max_live_enrollments: number | null;
  retention_days: number;
  approved_templates: FollowupSettingsView['approved_templates'];
  followups_enabled: boolean;
  revision: number;
  updated_at: Date;
};

const toView = (row: SettingsRow): FollowupSettingsView => ({
  customer_id: row.organization_id,
  send_window: row.send_window,
  contact_daily_cap: row.contact_daily_cap,
  monthly_send_quota: row.monthly_send_quota,
  consent_mode: row.consent_mode,
  consent_tag: row.consent_tag,
  max_live_enrollments: row.max_live_enrollments,
  retention_days: row.retention_days,
  approved_templates: row.approved_templates,
  followups_enabled: row.followups_enabled,
  revision: row.revision,
  updated_at: row.updated_at.toISOString(),
});

/** Every SQL statement of organization follow-up settings. */
@Injectable()
export class SettingsRepository {
  /** The organization's settings, or the defaults (revision 0) when it never saved any. */
  async get(tx: Queryable, organizationId: string): Promise<FollowupSettingsView> {
    const [row] = await rowsOf<SettingsRow>(tx, `SELECT * FROM settings WHERE organization_id = $1`, [organizationId]);
    return row ? toView(row) : { ...DEFAULT_FOLLOWUP_SETTINGS, customer_id: organizationId, updated_at: new Date(0).toISOString() };
  }

  /**
   * Writes the whole settings row if its revision is still `expectedRevision` (0 = never saved).
   * @returns the new settings, or undefined when the revision moved on
   */
  async save(tx: Tx, next: Omit<FollowupSettingsView, 'revision' | 'updated_at'>, expectedRevision: number, now: Date): Promise<FollowupSettingsView | undefined> {
    const values = [next.customer_id, JSON.stringify(next.send_window), next.contact_daily_cap, next.monthly_send_quota, next.consent_mode, next.consent_tag, next.max_live_enrollments, next.retention_days, JSON.stringify(next.approved_templates), now, expectedRevision];
    // INSERT for a first save (expected 0); the conditional DO UPDATE is the compare-and-set of later ones.
    const rows = await rowsOf<SettingsRow>(
      tx,
      `INSERT INTO settings AS s (organization_id, send_window, contact_daily_cap, monthly_send_quota, consent_mode, consent_tag,
                                  max_live_enrollments, retention_days, approved_templates, revision, updated_at)
       SELECT $1, $2::jsonb, $3, $4, $5, $6, $7, $8, $9::jsonb, 1, $10 WHERE $11::int = 0
       ON CONFLICT (organization_id) DO NOTHING
       RETURNING *`,
      values,
    );
    if (rows[0]) return toView(rows[0]);
    const updated = await rowsOf<SettingsRow>(
      tx,
      `UPDATE settings SET send_window = $2::jsonb, contact_daily_cap = $3, monthly_send_quota = $4, consent_mode = $5, consent_tag = $6,
              max_live_enrollments = $7, retention_days = $8, approved_templates = $9::jsonb, revision = revision + 1, updated_at = $10
        WHERE organization_id = $1 AND revision = $11
        RETURNING *`,
      values,
    );
    return updated[0] ? toView(updated[0]) : undefined;
  }

  /**
   * Turns the organization's follow-ups entitlement on or off, whatever the revision (the billing
   * side sets a fact, it does not edit a form): a first write creates the row with the defaults.
   * @returns the settings after the write
   */
  async setEntitlement(tx: Tx, organizationId: string, enabled: boolean, now: Date): Promise<FollowupSettingsView> {
    const d = DEFAULT_FOLLOWUP_SETTINGS;
    const [row] = await rowsOf<SettingsRow>(
      tx,
      `INSERT INTO settings AS s (organization_id, send_window, contact_daily_cap, monthly_send_quota, consent_mode, consent_tag,
                                  max_live_enrollments, retention_days, approved_templates, followups_enabled, revision, updated_at)
       VALUES ($1, $2::jsonb, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, 1, $11)
       ON CONFLICT (organization_id) DO UPDATE SET followups_enabled = EXCLUDED.followups_enabled, revision = s.revision + 1, updated_at = EXCLUDED.updated_at
       RETURNING *`,
      [organizationId, JSON.stringify(d.send_window), d.contact_daily_cap, d.monthly_send_quota, d.consent_mode, d.consent_tag, d.max_live_enrollments, d.retention_days, JSON.stringify(d.approved_templates), enabled, now],
    );
    return toView(row!);
  }
}
