import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The daily prospect cap (seed 003 §6) and email/LinkedIn senders as provider accounts (seed
 * 003 §4.6): a sender's Nylas grant or Unipile account id, searchable (webhooks are routed by it);
 * the counters of prospect emails per mailbox and UTC day, one claim row per counted entry (a
 * retried entry is never counted twice), the per-organization override, the read model that says
 * who is not a prospect, and `claim_prospect_email_send`, the one function that counts and refuses.
 */
export class CreateProspectCapAndAccounts1765100000000 implements MigrationInterface {
  name = 'CreateProspectCapAndAccounts1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE senders ADD COLUMN provider_account_id text NULL, ADD COLUMN account_provider text NULL`);
    // One live sender per provider account: a webhook names the account, and the account names the organization.
    await q.query(`CREATE UNIQUE INDEX senders_provider_account_key ON senders (channel, provider_account_id) WHERE removed_at IS NULL AND provider_account_id IS NOT NULL`);

    await q.query(`
      CREATE TABLE prospect_send_counters (
        sender_id uuid NOT NULL REFERENCES senders (id),
        day date NOT NULL,
        sent integer NOT NULL CHECK (sent >= 0),
        PRIMARY KEY (sender_id, day)
      )`);
    await q.query(`
      CREATE TABLE prospect_send_claims (
        entry_id uuid PRIMARY KEY,
        sender_id uuid NOT NULL,
        day date NOT NULL,
        created_at timestamptz NOT NULL
      )`);
    await q.query(`
      CREATE TABLE prospect_cap_settings (
        organization_id text PRIMARY KEY,
        prospect_emails_per_day integer NOT NULL CHECK (prospect_emails_per_day >= 0),
        updated_at timestamptz NOT NULL
      )`);
    // Who is NOT a prospect, kept from messaging's events: a CRM person with this address, an address that wrote to us.
    await q.query(`
      CREATE TABLE email_correspondents (
        organization_id text NOT NULL,
        address text NOT NULL,
        crm_person boolean NOT NULL DEFAULT false,
        wrote_in boolean NOT NULL DEFAULT false,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (organization_id, address)
      )`);
    await q.query(`CREATE INDEX message_outbox_email_recipient_idx ON message_outbox (organization_id, pacing_key) WHERE channel = 'email' AND status = 'accepted'`);

    // Outcomes: 'claimed' (counted, send), 'already_claimed' (this entry was counted before: send),
    // 'not_prospect' (not counted: send), 'refused' (the mailbox's cap for the UTC day is reached, or 0).
    // The count and the refusal are ONE statement: the INSERT … ON CONFLICT DO UPDATE … WHERE sent < cap
    // takes the counter row's lock, so two dispatchers racing for the 30th slot cannot both get it.
    await q.query(`
      CREATE FUNCTION claim_prospect_email_send(p_entry uuid, p_org text, p_sender uuid, p_recipient text, p_now timestamptz, p_default_cap integer)
      RETURNS text
      LANGUAGE plpgsql
      SET search_path FROM CURRENT
      AS $fn$
      DECLARE
        v_day date := (p_now AT TIME ZONE 'UTC')::date;
        v_cap integer;
        v_sent integer;
      BEGIN
        IF EXISTS (SELECT 1 FROM prospect_send_claims WHERE entry_id = p_entry) THEN
          RETURN 'already_claimed';
        END IF;
        IF EXISTS (
          SELECT 1 FROM email_correspondents c
           WHERE c.organization_id = p_org AND c.address = lower(p_recipient)
             AND (c.wrote_in OR (c.crm_person AND EXISTS (
                   SELECT 1 FROM message_outbox m
                    WHERE m.organization_id = p_org AND m.channel = 'email' AND m.status = 'accepted' AND m.pacing_key = lower(p_recipient))))
        ) THEN
          RETURN 'not_prospect';
        END IF;
        v_cap := COALESCE((SELECT prospect_emails_per_day FROM prospect_cap_settings WHERE organization_id = p_org), p_default_cap);
        INSERT INTO prospect_send_counters AS c (sender_id, day, sent)
        SELECT p_sender, v_day, 1 WHERE v_cap > 0
        ON CONFLICT (sender_id, day) DO UPDATE SET sent = c.sent + 1 WHERE c.sent < v_cap
        RETURNING c.sent INTO v_sent;
        IF v_sent IS NULL THEN
          RETURN 'refused';
        END IF;
        INSERT INTO prospect_send_claims (entry_id, sender_id, day, created_at) VALUES (p_entry, p_sender, v_day, p_now);
        RETURN 'claimed';
      END
      $fn$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION claim_prospect_email_send(uuid, text, uuid, text, timestamptz, integer)`);
    await q.query(`DROP INDEX message_outbox_email_recipient_idx`);
    await q.query(`DROP TABLE email_correspondents`);
    await q.query(`DROP TABLE prospect_cap_settings`);
    await q.query(`DROP TABLE prospect_send_claims`);
    await q.query(`DROP TABLE prospect_send_counters`);
    await q.query(`DROP INDEX senders_provider_account_key`);
    await q.query(`ALTER TABLE senders DROP COLUMN account_provider, DROP COLUMN provider_account_id`);
  }
}
