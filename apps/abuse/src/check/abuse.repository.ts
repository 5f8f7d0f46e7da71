import { Injectable } from '@nestjs/common';
import type { AbuseActionType, AbuseActionView, AbusePatternType, RateLimitConfigView } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { RecentMessage } from '../patterns/pattern-detection.js';
import type { RateCounters, RateLimits } from '../rate-limits/windows.js';

interface ActionRow {
  id: string;
  organization_id: string;
  contact_id: string;
  conversation_id: string | null;
  action_type: AbuseActionType;
  offense_number: number;
  reason: string;
  starts_at: Date;
  expires_at: Date;
  status: 'active' | 'expired';
}

export interface CounterRow extends RateCounters {
  total_count: string;
  recent: RecentMessage[];
}

/** Every SQL statement of the abuse check, penalties and their expiry. */
@Injectable()
export class AbuseRepository {
  /**
   * The limits for a message: the most specific `rate_limit_config` row, organization before
   * platform default, exact channel before `*`, exact user type before `all`.
   */
  async findLimits(tx: Tx, organizationId: string, channel: string, userType: string): Promise<RateLimits | null> {
    const rows = await tx.query<RateLimits>(
      `SELECT per_minute, per_hour, per_day, per_instance FROM rate_limit_config
        WHERE (organization_id = $1 OR organization_id IS NULL)
          AND channel IN ($2, '*') AND user_type IN ($3, 'all')
        ORDER BY (organization_id IS NOT NULL) DESC, (user_type = $3) DESC, (channel = $2) DESC
        LIMIT 1`,
      [organizationId, channel, userType],
    );
    return rows[0] ?? null;
  }

  async listConfig(tx: Tx, organizationId?: string): Promise<RateLimitConfigView[]> {
    return tx.query<RateLimitConfigView>(
      `SELECT organization_id, channel, user_type, per_minute, per_hour, per_day, per_instance FROM rate_limit_config
        WHERE organization_id IS NULL OR organization_id = $1 ORDER BY organization_id NULLS FIRST, channel, user_type`,
      [organizationId ?? null],
    );
  }

  /** The restriction in force for a contact at `now` (a throttle or block not yet expired), longest first. */
  async findActiveRestriction(tx: Tx, organizationId: string, contactId: string, now: Date): Promise<AbuseActionView | null> {
    const rows = await tx.query<ActionRow>(
      `SELECT * FROM abuse_actions
        WHERE organization_id = $1 AND contact_id = $2 AND status = 'active'
          AND action_type IN ('throttle', 'block') AND expires_at > $3
        ORDER BY (action_type = 'block') DESC, expires_at DESC LIMIT 1`,
      [organizationId, contactId, now],
    );
    return rows[0] ? toView(rows[0]) : null;
  }

  /**
   * The restriction in force at `now` of each contact (`findActiveRestriction` for several, one
   * statement), keyed `organization_id|contact_id`; a contact with none is absent.
   */
  async findActiveRestrictions(tx: Tx, contacts: { organizationId: string; contactId: string }[], now: Date): Promise<Map<string, AbuseActionView>> {
    if (contacts.length === 0) return new Map();
    const rows = await tx.query<ActionRow>(
      `SELECT DISTINCT ON (a.organization_id, a.contact_id) a.* FROM abuse_actions a
         JOIN unnest($1::text[], $2::text[]) AS c(organization_id, contact_id) ON a.organization_id = c.organization_id AND a.contact_id = c.contact_id
        WHERE a.status = 'active' AND a.action_type IN ('throttle', 'block') AND a.expires_at > $3
        ORDER BY a.organization_id, a.contact_id, (a.action_type = 'block') DESC, a.expires_at DESC`,
      [contacts.map((c) => c.organizationId), contacts.map((c) => c.contactId), now],
    );
    return new Map(rows.map((r) => [`${r.organization_id}|${r.contact_id}`, toView(r)]));
  }

  /**
   * The counter rows of several conversations (`lockCounters` for each, one statement), locked in
   * conversation id order so that two batches never wait on each other in a cycle; keyed by
   * conversation id. Each conversation once (an upsert may touch a row only once per statement).
   */
  async lockCountersMany(tx: Tx, rows: { organizationId: string; conversationId: string; contactId: string }[]): Promise<Map<string, CounterRow>> {
    const unique = [...new Map(rows.map((r) => [r.conversationId, r])).values()].sort((a, b) => (a.conversationId < b.conversationId ? -1 : a.conversationId > b.conversationId ? 1 : 0));
    if (unique.length === 0) return new Map();
    const locked = await tx.query<CounterRow & { conversation_id: string }>(
      `INSERT INTO rate_counters (conversation_id, organization_id, contact_id)
       SELECT conversation_id, organization_id, contact_id FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS c(conversation_id, organization_id, contact_id, n) ORDER BY n
       ON CONFLICT (conversation_id) DO UPDATE SET conversation_id = EXCLUDED.conversation_id
       RETURNING *`,
      [unique.map((r) => r.conversationId), unique.map((r) => r.organizationId), unique.map((r) => r.contactId)],
    );
    return new Map(locked.map((r) => [r.conversation_id, r]));
  }

  /** Writes several conversations' counters (`saveCounters` for each, one statement). */
  async saveCountersMany(tx: Tx, saves: { conversationId: string; counters: RateCounters; totalCount: number; recent: RecentMessage[] }[], now: Date): Promise<void> {
    if (saves.length === 0) return;
    await tx.query(
      `UPDATE rate_counters r SET minute_count = s.minute_count, minute_reset_at = s.minute_reset_at, hourly_count = s.hourly_count, hourly_reset_at = s.hourly_reset_at,
              daily_count = s.daily_count, daily_reset_at = s.daily_reset_at, is_throttled = s.is_throttled, throttled_until = s.throttled_until, throttle_limit = s.throttle_limit,
              total_count = s.total_count, recent = s.recent, updated_at = $2
         FROM jsonb_to_recordset($1::jsonb) AS s(conversation_id text, minute_count int, minute_reset_at timestamptz, hourly_count int, hourly_reset_at timestamptz, daily_count int,
              daily_reset_at timestamptz, is_throttled boolean, throttled_until timestamptz, throttle_limit text, total_count bigint, recent jsonb)
        WHERE r.conversation_id = s.conversation_id`,
      [JSON.stringify(saves.map(({ conversationId, counters: c, totalCount, recent }) => ({ conversation_id: conversationId, ...pickCounters(c), total_count: totalCount, recent }))), now],
    );
  }

  /**
   * The conversation's counter row, locked for this transaction. Created on first use; the lock
   * serialises concurrent checks of one conversation, so each message is counted exactly once.
   */
  async lockCounters(tx: Tx, organizationId: string, conversationId: string, contactId: string): Promise<CounterRow> {
    // One statement creates or locks the row: DO UPDATE takes the row lock and RETURNING reads it.
    const rows = await tx.query<CounterRow>(
      `INSERT INTO rate_counters (conversation_id, organization_id, contact_id) VALUES ($1, $2, $3)
       ON CONFLICT (conversation_id) DO UPDATE SET conversation_id = EXCLUDED.conversation_id
       RETURNING *`,
      [conversationId, organizationId, contactId],
    );
    return rows[0];
  }

  async saveCounters(tx: Tx, conversationId: string, c: RateCounters, totalCount: number, recent: RecentMessage[], now: Date): Promise<void> {
    await tx.query(
      `UPDATE rate_counters SET minute_count = $2, minute_reset_at = $3, hourly_count = $4, hourly_reset_at = $5,
              daily_count = $6, daily_reset_at = $7, is_throttled = $8, throttled_until = $9, throttle_limit = $10,
              total_count = $11, recent = $12::jsonb, updated_at = $13
        WHERE conversation_id = $1`,
      [conversationId, c.minute_count, c.minute_reset_at, c.hourly_count, c.hourly_reset_at, c.daily_count, c.daily_reset_at, c.is_throttled, c.throttled_until, c.throttle_limit, totalCount, JSON.stringify(recent), now],
    );
  }

  async insertPattern(tx: Tx, p: { organizationId: string; contactId: string; conversationId: string; type: AbusePatternType; confidence: number; details: Record<string, unknown>; at: Date }): Promise<void> {
    await tx.query(
      `INSERT INTO abuse_patterns (organization_id, contact_id, conversation_id, pattern_type, confidence, details, detected_at)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`,
      [p.organizationId, p.contactId, p.conversationId, p.type, p.confidence.toFixed(3), JSON.stringify(p.details), p.at],
    );
  }

  /** Offenses (penalties applied) of a contact since `since`. */
  async countOffensesSince(tx: Tx, organizationId: string, contactId: string, since: Date): Promise<number> {
    const [row] = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM abuse_actions WHERE organization_id = $1 AND contact_id = $2 AND created_at > $3`, [organizationId, contactId, since]);
    return row.n;
  }

  async insertAction(tx: Tx, a: { organizationId: string; contactId: string; conversationId: string; type: AbuseActionType; offenseNumber: number; reason: string; startsAt: Date; expiresAt: Date }): Promise<AbuseActionView> {
    // A warning restricts nothing, so it is born expired: the sweep never announces its end.
    const status = a.type === 'warning' ? 'expired' : 'active';
    const rows = await tx.query<ActionRow>(
      `INSERT INTO abuse_actions (organization_id, contact_id, conversation_id, action_type, offense_number, reason, starts_at, expires_at, status, expired_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $9 = 'expired' THEN $7::timestamptz END, $7)
       RETURNING *`,
      [a.organizationId, a.contactId, a.conversationId, a.type, a.offenseNumber, a.reason, a.startsAt, a.expiresAt, status],
    );
    return toView(rows[0]);
  }

  /**
   * Marks up to `limit` active actions whose time is up as expired and returns them. SKIP LOCKED:
   * two replicas sweeping at once take different rows instead of waiting on each other.
   */
  async expireDue(tx: Tx, now: Date, limit: number): Promise<AbuseActionView[]> {
    const result = await tx.query<ActionRow>(
      `UPDATE abuse_actions SET status = 'expired', expired_at = $1
        WHERE id IN (SELECT id FROM abuse_actions WHERE status = 'active' AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
        RETURNING *`,
      [now, limit],
    );
    return updatedRows<ActionRow>(result).map(toView);
  }

  async listActions(tx: Tx, organizationId: string, contactId: string | undefined, activeOnly: boolean, now: Date): Promise<AbuseActionView[]> {
    const rows = await tx.query<ActionRow>(
      `SELECT * FROM abuse_actions WHERE organization_id = $1 AND ($2::text IS NULL OR contact_id = $2)
          AND (NOT $3 OR (status = 'active' AND expires_at > $4))
        ORDER BY created_at DESC LIMIT 200`,
      [organizationId, contactId ?? null, activeOnly, now],
    );
    return rows.map(toView);
  }
}

/** The columns of `RateCounters` alone (a counter row read back carries others). */
function pickCounters(c: RateCounters): RateCounters {
  return {
    minute_count: c.minute_count,
    minute_reset_at: c.minute_reset_at,
    hourly_count: c.hourly_count,
    hourly_reset_at: c.hourly_reset_at,
    daily_count: c.daily_count,
    daily_reset_at: c.daily_reset_at,
    is_throttled: c.is_throttled,
    throttled_until: c.throttled_until,
    throttle_limit: c.throttle_limit,
  };
}

/** TypeORM answers an UPDATE … RETURNING on Postgres with `[rows, count]`; an INSERT with the rows. */
function updatedRows<T>(result: unknown): T[] {
  return Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? (result[0] as T[]) : (result as T[]);
}

function toView(r: ActionRow): AbuseActionView {
  return {
    action_id: r.id,
    organization_id: r.organization_id,
    contact_id: r.contact_id,
    conversation_id: r.conversation_id,
    action_type: r.action_type,
    offense_number: r.offense_number,
    reason: r.reason,
    starts_at: new Date(r.starts_at).toISOString(),
    expires_at: new Date(r.expires_at).toISOString(),
    status: r.status,
  };
}
