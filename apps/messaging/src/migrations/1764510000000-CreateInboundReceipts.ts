import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Inbound receipts: a provider's inbound message stored as it came, before any processing, so the
 * webhook is acknowledged after one durable insert (DESIGN §3 "answers 2xx only once the owning
 * service has durably stored it") and processed by messaging's own worker, retried until it is.
 * A processed receipt is deleted: from then on the message row (unique provider id) is the record.
 */
export class CreateInboundReceipts1764510000000 implements MigrationInterface {
  name = 'CreateInboundReceipts1764510000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE inbound_receipts (
        id bigserial PRIMARY KEY,
        organization_id text NOT NULL,
        channel text NOT NULL,
        external_id text NOT NULL,
        sender_id text NULL,
        contact_name text NULL,
        message jsonb NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        due_at timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        last_error text NULL
      )`);
    // One receipt per provider id while it waits: a concurrent redelivery is a no-op insert.
    await q.query(`CREATE UNIQUE INDEX inbound_receipts_external_uidx ON inbound_receipts (organization_id, channel, external_id)`);
    await q.query(`CREATE INDEX inbound_receipts_due_idx ON inbound_receipts (due_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE inbound_receipts`);
  }
}
