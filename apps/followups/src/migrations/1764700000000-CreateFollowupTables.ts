import type { MigrationInterface, QueryRunner } from 'typeorm';

const LIVE = `('active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual')`;

/**
 * The followups schema (DESIGN §4): flows with their draft, immutable published versions,
 * enrollments (one live per flow × contact), their timeline and effects, organization settings,
 * and the read models of contacts' activity and of senders that the release loop checks.
 */
export class CreateFollowupTables1764700000000 implements MigrationInterface {
  name = 'CreateFollowupTables1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE flows (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        name text NOT NULL,
        graph jsonb NOT NULL,
        settings jsonb NOT NULL,
        status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused', 'archived')),
        published_version_id uuid NULL,
        revision integer NOT NULL DEFAULT 1,
        model_id text NULL,
        stage_id text NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX flows_organization_idx ON flows (organization_id, created_at DESC, id DESC)`);

    // Immutable: rows are only ever inserted. Enrollments pin one (seed 000 "Versions are immutable").
    await q.query(`
      CREATE TABLE flow_versions (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        flow_id uuid NOT NULL REFERENCES flows (id) ON DELETE CASCADE,
        version integer NOT NULL,
        graph jsonb NOT NULL,
        settings jsonb NOT NULL,
        source_version_id uuid NULL,
        published_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT flow_versions_number_key UNIQUE (flow_id, version)
      )`);

    await q.query(`
      CREATE TABLE settings (
        organization_id uuid PRIMARY KEY,
        send_window jsonb NOT NULL,
        contact_daily_cap integer NOT NULL,
        monthly_send_quota integer NULL,
        consent_mode text NOT NULL,
        consent_tag text NOT NULL,
        max_live_enrollments integer NULL,
        retention_days integer NOT NULL,
        approved_templates jsonb NOT NULL DEFAULT '[]',
        revision integer NOT NULL DEFAULT 1,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE monthly_usage (
        organization_id uuid NOT NULL,
        month date NOT NULL,
        sends integer NOT NULL DEFAULT 0,
        PRIMARY KEY (organization_id, month)
      )`);

    // Read model of each contact's activity, fed by messaging's events. The release loop takes it
    // FOR SHARE SKIP LOCKED and the stop paths update it, which orders the two (seed 000 "Stop paths and ordering").
    await q.query(`
      CREATE TABLE contacts (
        organization_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        name text NULL,
        phone text NULL,
        email text NULL,
        tags text[] NOT NULL DEFAULT '{}',
        fields jsonb NOT NULL DEFAULT '{}',
        last_inbound_at timestamptz NULL,
        last_inbound_text text NULL,
        last_conversation_id uuid NULL,
        last_sender_id uuid NULL,
        opted_out_at timestamptz NULL,
        handoff_at timestamptz NULL,
        erased_at timestamptz NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (organization_id, contact_id)
      )`);

    await q.query(`
      CREATE TABLE enrollments (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        flow_id uuid NOT NULL REFERENCES flows (id) ON DELETE CASCADE,
        version_id uuid NOT NULL REFERENCES flow_versions (id),
        contact_id uuid NOT NULL,
        conversation_id uuid NULL,
        agent_id uuid NULL,
        appointment_id uuid NULL,
        operation_key text NOT NULL,
        status text NOT NULL CHECK (status IN ${LIVE.slice(0, -1)}, 'completed', 'cancelled', 'dead')),
        reason text NULL,
        node_id text NULL,
        step integer NOT NULL DEFAULT 0,
        next_run_at timestamptz NULL,
        node_entered_at timestamptz NULL,
        variables jsonb NOT NULL DEFAULT '{}',
        anchor_at timestamptz NULL,
        sender_id uuid NULL,
        repeat_counts jsonb NOT NULL DEFAULT '{}',
        last_reply_text text NULL,
        reply_seen_at timestamptz NULL,
        handoff_seen_at timestamptz NULL,
        pending_exit text NULL,
        cancel_on_reply boolean NOT NULL,
        handoff_policy text NOT NULL,
        last_send_status text NULL,
        inflight_effect_id uuid NULL,
        sender_unavailable_since timestamptz NULL,
        failures integer NOT NULL DEFAULT 0,
        last_error text NULL,
        revision integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz NULL,
        CONSTRAINT enrollments_operation_key UNIQUE (organization_id, operation_key)
      )`);
    // One live enrollment per flow and contact (seed 000 "Data"; seed 002 statuses).
    await q.query(`CREATE UNIQUE INDEX enrollments_one_live_idx ON enrollments (flow_id, contact_id) WHERE status IN ${LIVE}`);
    // The release claim scans only what can be due, oldest first.
    await q.query(`CREATE INDEX enrollments_due_idx ON enrollments (next_run_at) WHERE status IN ('active', 'waiting_reply')`);
    // Every stop path is one indexed UPDATE on the contact's live enrollments (seed 000 "Data").
    await q.query(`CREATE INDEX enrollments_contact_live_idx ON enrollments (contact_id) WHERE status IN ${LIVE}`);
    // Keyset pages of lists and of the queue: (created_at, id) never changes, so a page boundary is stable.
    await q.query(`CREATE INDEX enrollments_page_idx ON enrollments (organization_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX enrollments_flow_idx ON enrollments (flow_id, status)`);

    await q.query(`
      CREATE TABLE enrollment_events (
        id bigserial PRIMARY KEY,
        organization_id uuid NOT NULL,
        enrollment_id uuid NOT NULL,
        type text NOT NULL,
        node_id text NULL,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX enrollment_events_enrollment_idx ON enrollment_events (enrollment_id, id)`);

    // A step's effect; unique per (enrollment, node, visit, kind): releasing one step twice is impossible.
    await q.query(`
      CREATE TABLE effects (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        enrollment_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        node_id text NOT NULL,
        step integer NOT NULL,
        kind text NOT NULL CHECK (kind IN ('send', 'classification', 'schedule_plan', 'action')),
        status text NOT NULL CHECK (status IN ('queued', 'sent', 'failed', 'cancelled', 'skipped', 'uncertain', 'done')),
        idempotency_key text NULL,
        text text NULL,
        template jsonb NULL,
        usage jsonb NULL,
        message_id uuid NULL,
        sender_id uuid NULL,
        reason text NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT effects_step_key UNIQUE (enrollment_id, node_id, step, kind)
      )`);
    await q.query(`CREATE UNIQUE INDEX effects_idempotency_key_idx ON effects (idempotency_key) WHERE idempotency_key IS NOT NULL`);
    await q.query(`CREATE INDEX effects_enrollment_idx ON effects (enrollment_id, created_at)`);
    // The per-contact 24 h cap counts a contact's recent sends.
    await q.query(`CREATE INDEX effects_contact_sends_idx ON effects (contact_id, created_at) WHERE kind = 'send'`);

    // Read model of the dispatcher's senders (outbox.sender.* events), for sender choice.
    await q.query(`
      CREATE TABLE senders (
        sender_id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        channel text NOT NULL,
        status text NOT NULL,
        is_default boolean NOT NULL DEFAULT false,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX senders_organization_idx ON senders (organization_id, channel, status)`);
    // Per-number pacing of follow-up releases (seed 000 "pacing row SKIP LOCKED", "pacing += sendDelayMs").
    await q.query(`
      CREATE TABLE sender_pacing (
        sender_id uuid PRIMARY KEY,
        next_release_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['sender_pacing', 'senders', 'effects', 'enrollment_events', 'enrollments', 'contacts', 'monthly_usage', 'settings', 'flow_versions', 'flows']) {
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
