import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The transactional outbox and the consumer inbox every service has in its own schema
 * (DESIGN §2). Every service lists this migration first.
 */
export class CreateBusTables1764460000000 implements MigrationInterface {
  name = 'CreateBusTables1764460000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE outbox_events (
        id bigserial PRIMARY KEY,
        event_id text NOT NULL,
        type text NOT NULL,
        organization_id text NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        published_at timestamptz NULL,
        publish_attempts integer NOT NULL DEFAULT 0,
        CONSTRAINT outbox_events_event_id_key UNIQUE (event_id)
      )`);
    // The relay only ever scans the unpublished tail; keep that index tiny.
    await q.query(`CREATE INDEX outbox_events_unpublished_idx ON outbox_events (id) WHERE published_at IS NULL`);
    await q.query(`CREATE INDEX outbox_events_published_at_idx ON outbox_events (published_at) WHERE published_at IS NOT NULL`);
    await q.query(`
      CREATE TABLE inbox_events (
        event_id text NOT NULL,
        handler text NOT NULL,
        handled_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (event_id, handler)
      )`);
    await q.query(`CREATE INDEX inbox_events_handled_at_idx ON inbox_events (handled_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE inbox_events`);
    await q.query(`DROP TABLE outbox_events`);
  }
}

/**
 * Wakes the relay from the database itself: a statement-level trigger notifies
 * `outbox_<schema>` after each INSERT into outbox_events. NOTIFY is delivered at commit and
 * folded within a transaction, so a business transaction pays no extra round trip for it.
 */
export class AddOutboxNotifyTrigger1764460000100 implements MigrationInterface {
  name = 'AddOutboxNotifyTrigger1764460000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION notify_outbox_relay() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('outbox_' || TG_TABLE_SCHEMA, '');
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events
      FOR EACH STATEMENT EXECUTE FUNCTION notify_outbox_relay()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER outbox_events_notify ON outbox_events`);
    await q.query(`DROP FUNCTION notify_outbox_relay()`);
  }
}

/**
 * Drops the NOTIFY trigger: a notifying commit holds PostgreSQL's global notify-queue lock through
 * its WAL flush, so the trigger serialised every outbox commit of the database. The relay is now
 * woken by its own process after the commit, and writers elsewhere NOTIFY outside their
 * transaction (`runInTransaction`).
 */
export class DropOutboxNotifyTrigger1764460000200 implements MigrationInterface {
  name = 'DropOutboxNotifyTrigger1764460000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS outbox_events_notify ON outbox_events`);
    await q.query(`DROP FUNCTION IF EXISTS notify_outbox_relay()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await new AddOutboxNotifyTrigger1764460000100().up(q);
  }
}

/** The platform's own migrations, in order, that every service schema runs before its own. */
export const BUS_MIGRATIONS = [CreateBusTables1764460000000, AddOutboxNotifyTrigger1764460000100, DropOutboxNotifyTrigger1764460000200];
