import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The messaging schema (seed 004 "Core Tables", DESIGN §4): contacts, conversations and their
 * bounded instances, messages of every channel with attachments, statuses waiting for their
 * message, summaries, notifications, the read models of abuse restrictions and WhatsApp senders,
 * and the real-time feed.
 */
export class CreateMessagingTables1764500000000 implements MigrationInterface {
  name = 'CreateMessagingTables1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE contacts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        kind text NOT NULL DEFAULT 'crm' CHECK (kind IN ('crm', 'prospect')),
        name text NULL,
        phone text NULL,
        phone_key text NULL,
        email text NULL,
        email_key text NULL,
        linkedin_url text NULL,
        linkedin_provider_id text NULL,
        tags text[] NOT NULL DEFAULT '{}',
        custom_fields jsonb NOT NULL DEFAULT '{}'::jsonb,
        time_zone text NULL,
        user_type text NOT NULL DEFAULT 'all',
        opted_out_at timestamptz NULL,
        erased_at timestamptz NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    // phone_key is libs/phone's toPhoneKey: Brazil's ninth digit restored, so both notations meet here.
    await q.query(`CREATE UNIQUE INDEX contacts_phone_uidx ON contacts (organization_id, kind, phone_key) WHERE phone_key IS NOT NULL AND erased_at IS NULL`);
    await q.query(`CREATE UNIQUE INDEX contacts_email_uidx ON contacts (organization_id, kind, email_key) WHERE email_key IS NOT NULL AND erased_at IS NULL`);
    await q.query(`CREATE INDEX contacts_linkedin_idx ON contacts (organization_id, linkedin_provider_id) WHERE linkedin_provider_id IS NOT NULL`);
    await q.query(`CREATE INDEX contacts_list_idx ON contacts (organization_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX contacts_tags_idx ON contacts USING gin (tags)`);

    await q.query(`
      CREATE TABLE conversations (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        contact_id uuid NOT NULL REFERENCES contacts (id),
        channel text NOT NULL,
        status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
        last_message_at timestamptz NULL,
        activity_at timestamptz NOT NULL,
        resolved_at timestamptz NULL,
        resolved_by text NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT conversations_contact_channel_key UNIQUE (organization_id, contact_id, channel)
      )`);
    await q.query(`CREATE INDEX conversations_list_idx ON conversations (organization_id, activity_at DESC, id DESC)`);

    await q.query(`
      CREATE TABLE conversation_instances (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        conversation_id uuid NOT NULL REFERENCES conversations (id),
        instance_number integer NOT NULL,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed', 'summarized')),
        message_count integer NOT NULL DEFAULT 0,
        started_at timestamptz NOT NULL,
        last_message_at timestamptz NULL,
        closed_at timestamptz NULL,
        auto_closed_reason text NULL CHECK (auto_closed_reason IN ('message_limit', 'time_limit', 'resolved')),
        summary_attempts integer NOT NULL DEFAULT 0,
        summary_error text NULL,
        CONSTRAINT conversation_instances_number_key UNIQUE (conversation_id, instance_number)
      )`);
    // Seed 004 "Instance Lifecycle": at most one active instance per conversation.
    await q.query(`CREATE UNIQUE INDEX conversation_instances_one_active_uidx ON conversation_instances (conversation_id) WHERE status = 'active'`);
    // The hourly idle sweep reads active instances by last activity.
    await q.query(`CREATE INDEX conversation_instances_idle_idx ON conversation_instances ((COALESCE(last_message_at, started_at))) WHERE status = 'active'`);
    await q.query(`CREATE INDEX conversation_instances_unsummarized_idx ON conversation_instances (closed_at) WHERE status = 'closed'`);

    await q.query(`
      CREATE TABLE messages (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        conversation_id uuid NOT NULL REFERENCES conversations (id),
        instance_id uuid NOT NULL REFERENCES conversation_instances (id),
        contact_id uuid NOT NULL,
        channel text NOT NULL,
        direction text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
        sender_type text NOT NULL,
        sender_id text NULL,
        message_type text NOT NULL DEFAULT 'text',
        body text NULL,
        subject text NULL,
        status text NOT NULL CHECK (status IN ('queued', 'sent', 'delivered', 'read', 'failed', 'cancelled', 'received')),
        external_id text NULL,
        thread_id text NULL,
        in_reply_to text NULL,
        headers jsonb NULL,
        payload jsonb NULL,
        idempotency_key text NULL,
        requester text NULL,
        context jsonb NULL,
        notification_id uuid NULL,
        notification_delivery_id uuid NULL,
        auto_reply boolean NOT NULL DEFAULT false,
        opt_out boolean NOT NULL DEFAULT false,
        error_code text NULL,
        error_message text NULL,
        provider_timestamp timestamptz NULL,
        created_at timestamptz NOT NULL,
        sent_at timestamptz NULL,
        delivered_at timestamptz NULL,
        read_at timestamptz NULL,
        failed_at timestamptz NULL,
        cancelled_at timestamptz NULL
      )`);
    // One row per provider id (wamid): concurrent duplicate deliveries make one row (seed 004 inbound).
    await q.query(`CREATE UNIQUE INDEX messages_external_uidx ON messages (organization_id, channel, external_id) WHERE external_id IS NOT NULL`);
    // One row per send cause (the caller's idempotency key).
    await q.query(`CREATE UNIQUE INDEX messages_idempotency_uidx ON messages (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL`);
    await q.query(`CREATE INDEX messages_thread_idx ON messages (conversation_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX messages_instance_idx ON messages (instance_id, created_at)`);
    await q.query(`CREATE INDEX messages_contact_idx ON messages (organization_id, contact_id)`);
    await q.query(`CREATE INDEX messages_delivery_idx ON messages (notification_delivery_id) WHERE notification_delivery_id IS NOT NULL`);

    // Seed 004 "Outbound messages count too": every message row, either direction, counts on its instance.
    await q.query(`
      CREATE FUNCTION messages_count_on_instance() RETURNS trigger
      LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        UPDATE conversation_instances
           SET message_count = message_count + 1,
               last_message_at = GREATEST(COALESCE(last_message_at, NEW.created_at), NEW.created_at)
         WHERE id = NEW.instance_id;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER messages_count_after_insert AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION messages_count_on_instance()`);

    await q.query(`
      CREATE TABLE message_attachments (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        message_id uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        media_type text NOT NULL,
        mime_type text NULL,
        url text NULL,
        provider_media_id text NULL,
        sha256 text NULL,
        caption text NULL,
        filename text NULL,
        created_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX message_attachments_message_idx ON message_attachments (message_id)`);

    // A delivery status that arrived before its message knew the provider id; replayed when it does.
    await q.query(`
      CREATE TABLE pending_statuses (
        id bigserial PRIMARY KEY,
        organization_id text NOT NULL,
        channel text NOT NULL,
        external_id text NOT NULL,
        status text NOT NULL,
        provider_timestamp timestamptz NULL,
        error_code text NULL,
        error_message text NULL,
        received_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX pending_statuses_lookup_idx ON pending_statuses (organization_id, channel, external_id)`);
    await q.query(`CREATE INDEX pending_statuses_age_idx ON pending_statuses (received_at)`);

    await q.query(`
      CREATE TABLE conversation_summaries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        conversation_id uuid NOT NULL REFERENCES conversations (id),
        instance_id uuid NOT NULL REFERENCES conversation_instances (id),
        summary text NOT NULL,
        run_id text NULL,
        created_at timestamptz NOT NULL
      )`);
    // Seed 004: one summary per instance, so a retried summarization conflicts instead of appending.
    await q.query(`CREATE UNIQUE INDEX conversation_summaries_instance_uidx ON conversation_summaries (instance_id)`);

    await q.query(`
      CREATE TABLE notification_templates (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        key text NOT NULL,
        title text NULL,
        body text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT notification_templates_key UNIQUE (organization_id, key)
      )`);
    await q.query(`
      CREATE TABLE notifications (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        contact_id uuid NOT NULL REFERENCES contacts (id),
        template_key text NULL,
        title text NULL,
        body text NOT NULL,
        priority text NOT NULL DEFAULT 'normal',
        data jsonb NOT NULL DEFAULT '{}'::jsonb,
        idempotency_key text NULL,
        conversation_instance_id uuid NULL,
        created_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE UNIQUE INDEX notifications_idempotency_uidx ON notifications (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL`);
    await q.query(`CREATE INDEX notifications_list_idx ON notifications (organization_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE notification_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id text NOT NULL,
        notification_id uuid NOT NULL REFERENCES notifications (id),
        channel text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'skipped')),
        message_id uuid NULL,
        error_code text NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT notification_deliveries_channel_key UNIQUE (notification_id, channel)
      )`);
    await q.query(`
      CREATE TABLE notification_preferences (
        organization_id text NOT NULL,
        contact_id uuid NOT NULL REFERENCES contacts (id),
        channel text NOT NULL,
        enabled boolean NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (organization_id, contact_id, channel)
      )`);

    // Read model of abuse.action.* (seed 004 "When the Check Itself Fails").
    await q.query(`
      CREATE TABLE abuse_restrictions (
        action_id text PRIMARY KEY,
        organization_id text NOT NULL,
        contact_id text NOT NULL,
        action_type text NOT NULL,
        expires_at timestamptz NOT NULL,
        status text NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX abuse_restrictions_contact_idx ON abuse_restrictions (organization_id, contact_id) WHERE status = 'active'`);

    // Read model of outbox.sender.*: which organization a WhatsApp business number belongs to.
    await q.query(`
      CREATE TABLE whatsapp_senders (
        phone_number_id text PRIMARY KEY,
        organization_id text NOT NULL,
        sender_id text NOT NULL,
        display_phone_number text NULL,
        status text NOT NULL,
        updated_at timestamptz NOT NULL
      )`);

    // The real-time feed behind GET /events/stream (short retention, resumed by id).
    await q.query(`
      CREATE TABLE stream_events (
        id bigserial PRIMARY KEY,
        organization_id text NOT NULL,
        type text NOT NULL,
        data jsonb NOT NULL,
        occurred_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX stream_events_org_idx ON stream_events (organization_id, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['stream_events', 'whatsapp_senders', 'abuse_restrictions', 'notification_preferences', 'notification_deliveries', 'notifications', 'notification_templates', 'conversation_summaries', 'pending_statuses', 'message_attachments']) {
      await q.query(`DROP TABLE ${table}`);
    }
    await q.query(`DROP TRIGGER messages_count_after_insert ON messages`);
    await q.query(`DROP FUNCTION messages_count_on_instance()`);
    await q.query(`DROP TABLE messages`);
    await q.query(`DROP TABLE conversation_instances`);
    await q.query(`DROP TABLE conversations`);
    await q.query(`DROP TABLE contacts`);
  }
}
