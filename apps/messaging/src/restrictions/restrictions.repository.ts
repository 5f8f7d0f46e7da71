import { Injectable } from '@nestjs/common';
import type { AbuseActionView } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';

/**
 * Messaging's read model of abuse penalties, fed by `abuse.action.applied | expired` (seed 004
 * "When the Check Itself Fails"): what is in force when the abuse service cannot be asked.
 */
@Injectable()
export class RestrictionsRepository {
  /** Applies an action event; an older event never overwrites a newer state (expired is final). */
  async upsert(tx: Tx, action: AbuseActionView, now: Date): Promise<void> {
    await tx.query(
      `INSERT INTO abuse_restrictions (action_id, organization_id, contact_id, action_type, expires_at, status, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (action_id) DO UPDATE SET status = CASE WHEN abuse_restrictions.status = 'expired' THEN 'expired' ELSE EXCLUDED.status END,
              expires_at = EXCLUDED.expires_at, updated_at = EXCLUDED.updated_at`,
      [action.action_id, action.organization_id, action.contact_id, action.action_type, action.expires_at, action.status, now],
    );
  }

  /**
   * The throttle or block in force for a contact at `now`, a block first. Throws when the read
   * fails: the caller must then abort rather than admit (seed 004: this backstop may not fail open).
   */
  async findActive(tx: Tx, organizationId: string, contactId: string, now: Date): Promise<{ action_id: string; action_type: 'throttle' | 'block'; expires_at: Date } | null> {
    const rows = await tx.query<{ action_id: string; action_type: 'throttle' | 'block'; expires_at: Date }>(
      `SELECT action_id, action_type, expires_at FROM abuse_restrictions
        WHERE organization_id = $1 AND contact_id = $2 AND status = 'active' AND action_type IN ('throttle', 'block') AND expires_at > $3
        ORDER BY (action_type = 'block') DESC, expires_at DESC LIMIT 1`,
      [organizationId, contactId, now],
    );
    return rows[0] ?? null;
  }

  /**
   * The block in force for a contact at `now` (the longest), or null. A throttle is rate limiting,
   * not access control, so it is not looked at here (seed 004 "When the Check Itself Fails").
   * Throws when the read fails: the caller must then abort rather than admit.
   */
  async findActiveBlock(tx: Tx, organizationId: string, contactId: string, now: Date): Promise<{ action_id: string; expires_at: Date } | null> {
    const rows = await tx.query<{ action_id: string; expires_at: Date }>(
      `SELECT action_id, expires_at FROM abuse_restrictions
        WHERE organization_id = $1 AND contact_id = $2 AND status = 'active' AND action_type = 'block' AND expires_at > $3
        ORDER BY expires_at DESC LIMIT 1`,
      [organizationId, contactId, now],
    );
    return rows[0] ?? null;
  }
}
