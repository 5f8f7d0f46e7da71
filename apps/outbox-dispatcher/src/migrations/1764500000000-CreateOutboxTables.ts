import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox schema (seed 004 "Outbound WhatsApp outbox & dispatcher"): senders and their
 * encrypted credentials, the entries, the per-(sender, recipient) pairs that pace and lease them,
 * one row per wire attempt, the do-not-contact list checked before every attempt, and the provider
 * statuses received by webhook.
 */
export class CreateOutboxTables1764500000000 implements MigrationInterface {
  name = 'CreateOutboxTables1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE senders (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        channel text NOT NULL CHECK (channel IN ('whatsapp', 'email', 'linkedin')),
        label text NULL,
        phone_number_id text NULL,
        display_phone_number text NULL,
        business_account_id text NULL,
        address text NULL,
        credentials_encrypted text NOT NULL,
        status text NOT NULL CHECK (status IN ('connected', 'disconnected')),
        is_default boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        removed_at timestamptz NULL
      )`);
    // A business number belongs to one organization at a time: webhooks are routed by it.
    await q.query(`CREATE UNIQUE INDEX senders_phone_number_id_key ON senders (phone_number_id) WHERE removed_at IS NULL AND phone_number_id IS NOT NULL`);
    await q.query(`CREATE UNIQUE INDEX senders_default_key ON senders (organization_id, channel) WHERE removed_at IS NULL AND is_default`);
    await q.query(`CREATE INDEX senders_organization_idx ON senders (organization_id, channel) WHERE removed_at IS NULL`);

    await q.query(`
      CREATE TABLE message_outbox_pairs (
        id bigserial PRIMARY KEY,
        organization_id text NOT NULL,
        sender_id uuid NOT NULL REFERENCES senders (id),
        pacing_key text NOT NULL,
        lease_owner text NULL,
        lease_fence bigint NOT NULL DEFAULT 0,
        lease_expires_at timestamptz NULL,
        last_attempt_started_at timestamptz NULL,
        next_due_at timestamptz NULL,
        created_at timestamptz NOT NULL,
        CONSTRAINT message_outbox_pairs_key UNIQUE (sender_id, pacing_key)
      )`);
    // The claim scans due pairs in due order; pairs with nothing pending have next_due_at NULL.
    await q.query(`CREATE INDEX message_outbox_pairs_due_idx ON message_outbox_pairs (next_due_at) WHERE next_due_at IS NOT NULL`);
    await q.query(`CREATE INDEX message_outbox_pairs_lease_idx ON message_outbox_pairs (lease_expires_at) WHERE lease_expires_at IS NOT NULL`);

    await q.query(`
      CREATE TABLE message_outbox (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        organization_id text NOT NULL,
        channel text NOT NULL,
        sender_id uuid NOT NULL REFERENCES senders (id),
        pair_id bigint NOT NULL REFERENCES message_outbox_pairs (id),
        recipient text NOT NULL,
        pacing_key text NOT NULL,
        idempotency_key text NOT NULL,
        payload_type text NOT NULL,
        payload jsonb NOT NULL,
        prepared jsonb NULL,
        status text NOT NULL CHECK (status IN ('pending', 'sending', 'accepted', 'failed', 'ambiguous', 'cancelled')),
        attempts integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL,
        next_attempt_at timestamptz NOT NULL,
        claim_fence bigint NULL,
        claimed_at timestamptz NULL,
        log_context jsonb NOT NULL DEFAULT '{}',
        requester text NULL,
        provider_message_id text NULL,
        evidence jsonb NULL,
        last_classification text NULL,
        last_error_code text NULL,
        last_error_message text NULL,
        last_http_status integer NULL,
        resolution text NULL,
        resolution_note text NULL,
        resolved_by text NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        settled_at timestamptz NULL,
        CONSTRAINT message_outbox_idempotency_key UNIQUE (organization_id, idempotency_key)
      )`);
    // FIFO head of a pair: the oldest unsettled entry.
    await q.query(`CREATE INDEX message_outbox_pair_fifo_idx ON message_outbox (pair_id, seq) WHERE status IN ('pending', 'sending')`);
    await q.query(`CREATE INDEX message_outbox_sending_idx ON message_outbox (pair_id) WHERE status = 'sending'`);
    await q.query(`CREATE INDEX message_outbox_due_idx ON message_outbox (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX message_outbox_ambiguous_idx ON message_outbox (created_at) WHERE status = 'ambiguous'`);
    await q.query(`CREATE INDEX message_outbox_provider_message_idx ON message_outbox (provider_message_id) WHERE provider_message_id IS NOT NULL`);
    await q.query(`CREATE INDEX message_outbox_settled_idx ON message_outbox (status, settled_at) WHERE settled_at IS NOT NULL`);

    await q.query(`
      CREATE TABLE message_outbox_attempts (
        id bigserial PRIMARY KEY,
        entry_id uuid NOT NULL REFERENCES message_outbox (id) ON DELETE CASCADE,
        pair_id bigint NOT NULL,
        fence bigint NOT NULL,
        dispatcher text NOT NULL,
        attempt_number integer NOT NULL,
        started_at timestamptz NOT NULL,
        ended_at timestamptz NULL,
        outcome text NOT NULL CHECK (outcome IN ('open', 'accepted', 'retry', 'failed', 'ambiguous', 'requeued')),
        classification text NULL,
        provider_code text NULL,
        http_status integer NULL,
        retry_after_ms integer NULL,
        body jsonb NULL
      )`);
    await q.query(`CREATE INDEX message_outbox_attempts_entry_idx ON message_outbox_attempts (entry_id)`);
    await q.query(`CREATE INDEX message_outbox_attempts_open_idx ON message_outbox_attempts (entry_id) WHERE outcome = 'open'`);
    await q.query(`CREATE INDEX message_outbox_attempts_pair_idx ON message_outbox_attempts (pair_id, started_at)`);

    await q.query(`
      CREATE TABLE contact_suppressions (
        id bigserial PRIMARY KEY,
        organization_id text NOT NULL,
        channel text NOT NULL,
        value text NOT NULL,
        reason text NULL,
        created_at timestamptz NOT NULL,
        CONSTRAINT contact_suppressions_key UNIQUE (organization_id, channel, value)
      )`);

    await q.query(`
      CREATE TABLE provider_statuses (
        id bigserial PRIMARY KEY,
        channel text NOT NULL,
        account_id text NOT NULL,
        provider_message_id text NOT NULL,
        status text NOT NULL,
        provider_timestamp timestamptz NOT NULL,
        recipient text NULL,
        correlation text NULL,
        entry_id uuid NULL,
        resolution_outcome text NULL,
        body jsonb NOT NULL,
        received_at timestamptz NOT NULL,
        CONSTRAINT provider_statuses_key UNIQUE (provider_message_id, status)
      )`);
    await q.query(`CREATE INDEX provider_statuses_received_idx ON provider_statuses (received_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE provider_statuses`);
    await q.query(`DROP TABLE contact_suppressions`);
    await q.query(`DROP TABLE message_outbox_attempts`);
    await q.query(`DROP TABLE message_outbox`);
    await q.query(`DROP TABLE message_outbox_pairs`);
    await q.query(`DROP TABLE senders`);
  }
}
