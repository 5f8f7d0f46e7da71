import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The abuse schema (seed 004 "Abuse Prevention Integration", DESIGN §4): limits per channel and
 * user type, rate counters per conversation, detected patterns and the penalties applied.
 */
export class CreateAbuseTables1764500000000 implements MigrationInterface {
  name = 'CreateAbuseTables1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE rate_limit_config (
        id bigserial PRIMARY KEY,
        organization_id text NULL,
        channel text NOT NULL DEFAULT '*',
        user_type text NOT NULL DEFAULT 'all',
        per_minute integer NOT NULL CHECK (per_minute > 0),
        per_hour integer NOT NULL CHECK (per_hour > 0),
        per_day integer NOT NULL CHECK (per_day > 0),
        per_instance integer NOT NULL CHECK (per_instance > 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    // One row per scope; a NULL organization is the platform default.
    await q.query(`CREATE UNIQUE INDEX rate_limit_config_scope_uidx ON rate_limit_config (COALESCE(organization_id, ''), channel, user_type)`);
    // Seed 004 "Rate Limiting": 5/min, 60/h, 200/day, 500 per instance for `all`; `premium` doubles them.
    await q.query(`
      INSERT INTO rate_limit_config (organization_id, channel, user_type, per_minute, per_hour, per_day, per_instance)
      VALUES (NULL, '*', 'all', 5, 60, 200, 500), (NULL, '*', 'premium', 10, 120, 400, 1000)`);

    await q.query(`
      CREATE TABLE rate_counters (
        conversation_id text PRIMARY KEY,
        organization_id text NOT NULL,
        contact_id text NOT NULL,
        minute_count integer NOT NULL DEFAULT 0,
        minute_reset_at timestamptz NULL,
        hourly_count integer NOT NULL DEFAULT 0,
        hourly_reset_at timestamptz NULL,
        daily_count integer NOT NULL DEFAULT 0,
        daily_reset_at timestamptz NULL,
        is_throttled boolean NOT NULL DEFAULT false,
        throttled_until timestamptz NULL,
        throttle_limit text NULL,
        total_count bigint NOT NULL DEFAULT 0,
        recent jsonb NOT NULL DEFAULT '[]'::jsonb,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE abuse_patterns (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        contact_id text NOT NULL,
        conversation_id text NOT NULL,
        pattern_type text NOT NULL CHECK (pattern_type IN ('spam', 'flooding', 'gibberish')),
        confidence numeric(4, 3) NOT NULL,
        details jsonb NOT NULL DEFAULT '{}'::jsonb,
        detected_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX abuse_patterns_contact_idx ON abuse_patterns (organization_id, contact_id, detected_at DESC)`);

    await q.query(`
      CREATE TABLE abuse_actions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        contact_id text NOT NULL,
        conversation_id text NULL,
        action_type text NOT NULL CHECK (action_type IN ('warning', 'throttle', 'block')),
        offense_number integer NOT NULL CHECK (offense_number > 0),
        reason text NOT NULL,
        starts_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'expired')),
        expired_at timestamptz NULL,
        created_at timestamptz NOT NULL
      )`);
    // Offense counting (last 30 days) and the active-restriction lookup both go by contact.
    await q.query(`CREATE INDEX abuse_actions_contact_idx ON abuse_actions (organization_id, contact_id, created_at DESC)`);
    // The expiry sweep scans only what is still active.
    await q.query(`CREATE INDEX abuse_actions_expiry_idx ON abuse_actions (expires_at) WHERE status = 'active'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE abuse_actions`);
    await q.query(`DROP TABLE abuse_patterns`);
    await q.query(`DROP TABLE rate_counters`);
    await q.query(`DROP TABLE rate_limit_config`);
  }
}
