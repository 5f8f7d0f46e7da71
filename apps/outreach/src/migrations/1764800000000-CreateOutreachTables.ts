import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outreach schema (seed 003 §5, DESIGN §4): campaigns, the organization-wide stop, enrollments,
 * decisions, proposed actions, and the runner tables that replace the seed's workflow engine (a run
 * per cause and a memo row per (run key, step)).
 */
export class CreateOutreachTables1764800000000 implements MigrationInterface {
  name = 'CreateOutreachTables1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE campaigns (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        name text NOT NULL,
        goal text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'paused', 'archived')),
        allowed_channels text[] NOT NULL,
        max_touches integer NOT NULL CHECK (max_touches >= 1),
        followup_min_days integer NOT NULL CHECK (followup_min_days >= 0),
        followup_max_days integer NOT NULL CHECK (followup_max_days >= followup_min_days),
        email_sender_id text NULL,
        linkedin_sender_id text NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        paused_at timestamptz NULL,
        archived_at timestamptz NULL
      )`);
    await q.query(`CREATE INDEX campaigns_org ON campaigns (organization_id, created_at DESC)`);

    // The organization-wide stop (seed 003 §6: organizations.outreach_stopped_at), kept by outreach.
    await q.query(`
      CREATE TABLE organization_settings (
        organization_id text PRIMARY KEY,
        outreach_stopped_at timestamptz NULL,
        updated_at timestamptz NOT NULL
      )`);

    await q.query(`
      CREATE TABLE enrollments (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        campaign_id uuid NOT NULL REFERENCES campaigns (id),
        person_kind text NOT NULL CHECK (person_kind IN ('crm', 'prospect')),
        person_id text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'needs_contact_data', 'ended')),
        ended_reason text NULL,
        ended_at timestamptz NULL,
        touch_count integer NOT NULL DEFAULT 0,
        context_version integer NOT NULL DEFAULT 1,
        next_check_at timestamptz NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        -- Insert order: the cap's take-back gives up a request's own newest rows first.
        seq bigserial NOT NULL,
        CHECK ((status = 'ended') = (ended_reason IS NOT NULL))
      )`);
    // One live enrollment per person across every campaign (seed 003 §5, Constraint).
    await q.query(`CREATE UNIQUE INDEX enrollments_one_live_per_person ON enrollments (organization_id, person_kind, person_id) WHERE status IN ('active', 'needs_contact_data')`);
    // Serves the due sweep (seed 003 §5).
    await q.query(`CREATE INDEX enrollments_due ON enrollments (next_check_at) WHERE status = 'active'`);
    await q.query(`CREATE INDEX enrollments_campaign_live ON enrollments (campaign_id) WHERE status IN ('active', 'needs_contact_data')`);
    await q.query(`CREATE INDEX enrollments_campaign ON enrollments (campaign_id, created_at)`);

    await q.query(`
      CREATE TABLE decisions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        enrollment_id uuid NOT NULL REFERENCES enrollments (id),
        trigger_event_id text NOT NULL,
        trigger_reason text NOT NULL,
        trigger_ref text NULL,
        -- The context_version the decision was made on (v); its effect moves the row to v+1.
        context_version integer NOT NULL,
        outcome text NOT NULL CHECK (outcome IN ('saved', 'invalid', 'error', 'discarded')),
        type text NULL,
        rationale text NULL,
        objective text NULL,
        goal_met boolean NOT NULL DEFAULT false,
        followup_days integer NULL,
        failure_reason text NULL,
        -- The newest message of the enrollment's email threads at build time: a reply answers it.
        reply_to_message_id text NULL,
        reply_to_text text NULL,
        run_id text NULL,
        raw_output jsonb NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        -- A retried save finds its row (seed 003 §4.3, The save).
        CONSTRAINT decisions_one_per_trigger UNIQUE (enrollment_id, trigger_event_id)
      )`);
    await q.query(`CREATE INDEX decisions_enrollment ON decisions (enrollment_id, created_at DESC)`);

    await q.query(`
      CREATE TABLE proposed_actions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        enrollment_id uuid NOT NULL REFERENCES enrollments (id),
        campaign_id uuid NOT NULL REFERENCES campaigns (id),
        -- One draft per decision (seed 003 §4.4).
        decision_id uuid NOT NULL UNIQUE REFERENCES decisions (id),
        type text NOT NULL CHECK (type IN ('email', 'linkedin_connection', 'linkedin_message')),
        status text NOT NULL CHECK (status IN ('pending_approval', 'approved', 'sending', 'executed', 'rejected', 'invalidated', 'failed')),
        draft_payload jsonb NOT NULL,
        approved_payload jsonb NULL,
        approved_hash text NULL,
        approved_by text NULL,
        approved_at timestamptz NULL,
        next_attempt_at timestamptz NULL,
        send_attempt integer NOT NULL DEFAULT 0,
        reject_reason text NULL,
        reject_then text NULL CHECK (reject_then IN ('regenerate', 'stop')),
        rejected_by text NULL,
        rejected_at timestamptz NULL,
        invalidated_reason text NULL,
        executed_at timestamptz NULL,
        message_id text NULL,
        conversation_id text NULL,
        provider_message_id text NULL,
        failure_reason text NULL,
        outcome_unknown boolean NOT NULL DEFAULT false,
        run_id text NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    // One pending draft per enrollment: the review queue never shows two for one person (seed 003 §5).
    await q.query(`CREATE UNIQUE INDEX proposed_actions_one_pending ON proposed_actions (enrollment_id) WHERE status = 'pending_approval'`);
    await q.query(`CREATE INDEX proposed_actions_queue ON proposed_actions (organization_id, created_at) WHERE status = 'pending_approval'`);
    await q.query(`CREATE INDEX proposed_actions_enrollment ON proposed_actions (enrollment_id, created_at DESC)`);
    // The LinkedIn reply correlation finds the action by the provider id we sent (seed 003 §4.7).
    await q.query(`CREATE INDEX proposed_actions_provider_message ON proposed_actions (organization_id, provider_message_id) WHERE provider_message_id IS NOT NULL`);
    await q.query(`CREATE INDEX proposed_actions_due ON proposed_actions (next_attempt_at) WHERE status = 'approved'`);

    // A runner run per cause (the event id): the bus handler only records it; a runner loop executes it.
    await q.query(`
      CREATE TABLE workflow_runs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        run_key text NOT NULL UNIQUE,
        kind text NOT NULL CHECK (kind IN ('decision', 'execution')),
        organization_id text NOT NULL,
        subject_id text NOT NULL,
        input jsonb NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        run_after timestamptz NOT NULL,
        lease_until timestamptz NULL,
        -- Bumped on every claim: a runner whose lease was taken over cannot finish the run.
        fence integer NOT NULL DEFAULT 0,
        last_error text NULL,
        created_at timestamptz NOT NULL,
        finished_at timestamptz NULL
      )`);
    await q.query(`CREATE INDEX workflow_runs_ready ON workflow_runs (run_after) WHERE status IN ('queued', 'running')`);
    await q.query(`CREATE INDEX workflow_runs_org_running ON workflow_runs (organization_id, kind) WHERE status = 'running'`);

    // Each step's output, memoised per run: a retried step reuses it (DESIGN §6: the step memo).
    await q.query(`
      CREATE TABLE workflow_steps (
        run_key text NOT NULL,
        step text NOT NULL,
        output jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (run_key, step)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE workflow_steps`);
    await q.query(`DROP TABLE workflow_runs`);
    await q.query(`DROP TABLE proposed_actions`);
    await q.query(`DROP TABLE decisions`);
    await q.query(`DROP TABLE enrollments`);
    await q.query(`DROP TABLE organization_settings`);
    await q.query(`DROP TABLE campaigns`);
  }
}
