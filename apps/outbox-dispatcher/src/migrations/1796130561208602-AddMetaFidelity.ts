import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What Meta's Cloud API says beyond an error code (its error-codes page): an entry keeps Graph's
 * `error_subcode` and `error_data.details`; a sender keeps why the dispatcher disconnected it (a
 * 190: the token expired) and until when its sends are slowed after an asynchronous rate-limit
 * error; the webhook-level `value.errors[]` Meta sends about a number are stored.
 */
export class AddMetaFidelity1796130561208602 implements MigrationInterface {
  name = 'AddMetaFidelity1796130561208602';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE message_outbox ADD COLUMN last_error_subcode text NULL, ADD COLUMN last_error_details text NULL`);
    await q.query(`ALTER TABLE senders ADD COLUMN status_reason text NULL, ADD COLUMN paused_until timestamptz NULL`);
    await q.query(`
      CREATE TABLE whatsapp_webhook_errors (
        id bigserial PRIMARY KEY,
        organization_id text NULL,
        sender_id uuid NULL REFERENCES senders (id),
        phone_number_id text NOT NULL,
        code integer NOT NULL,
        title text NULL,
        details text NULL,
        body jsonb NOT NULL,
        paused_until timestamptz NULL,
        received_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX whatsapp_webhook_errors_sender_idx ON whatsapp_webhook_errors (sender_id, received_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE whatsapp_webhook_errors`);
    await q.query(`ALTER TABLE senders DROP COLUMN status_reason, DROP COLUMN paused_until`);
    await q.query(`ALTER TABLE message_outbox DROP COLUMN last_error_subcode, DROP COLUMN last_error_details`);
  }
}
