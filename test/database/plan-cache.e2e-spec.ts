import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createServiceDataSource, runInTransaction } from '@touchpoint/database';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';

/**
 * The service data source prepares parameterised statements by name (parsed once per connection).
 * PostgreSQL would switch such a statement to a generic plan after five runs and keep it until the
 * table is analyzed again; planned on an empty table that plan can be a scan of the whole
 * organization. These tests pin that every run is planned for its own values.
 */
describe('service data source: prepared statements and plans', () => {
  let world: TestWorld;
  let dataSource: DataSource;
  let schema: string;

  beforeAll(async () => {
    world = await createTestWorld('plan_cache');
    // Messaging's own tables, migrated and empty, as on a fresh install.
    const messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', INBOUND_POLL_MS: '0' })));
    await messaging.close();
    schema = world.schema('messaging');
    dataSource = createServiceDataSource({ url: world.databaseUrl, schema, entities: [], migrations: [], poolSize: 1 });
    await dataSource.initialize();
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await world.close();
  });

  it('runs each statement with a custom plan (plan_cache_mode on every pooled connection)', async () => {
    const [row] = await dataSource.query(`SELECT current_setting('plan_cache_mode') AS mode WHERE $1::int = 1`, [1]);
    expect(row.mode).toBe('force_custom_plan');
  });

  it('a lookup prepared on an empty table still uses the unique index once the table has grown (never a scan of the organization)', async () => {
    const org = randomUUID();
    const lookup = `SELECT * FROM messages WHERE organization_id = $1 AND idempotency_key = $2`;
    // Only the rows matter here, not their conversations: foreign keys and triggers are off for these inserts.
    const insert = (from: number, to: number) =>
      runInTransaction(dataSource, schema, async (tx) => {
        await tx.query(`SET LOCAL session_replication_role = replica`);
        await tx.query(
          `INSERT INTO messages (organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, body, status, idempotency_key, created_at)
           SELECT $1, gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'whatsapp', 'outbound', 'followup', 'Oi!', 'sent', 'k-' || g, now() FROM generate_series($2::int, $3::int) g`,
          [org, from, to],
        );
      });
    // A young table (a few hundred rows, never analyzed), then more than five runs: the point where
    // PostgreSQL would settle on a generic plan; then the table grows.
    await insert(1, 200);
    for (let i = 0; i < 10; i++) expect(await dataSource.query(lookup, [org, `x-${i}`])).toEqual([]);
    await insert(201, 20_000);

    const readBy = async () => {
      const rows = await world.sql<{ index: string; read: string }>(`SELECT indexrelname AS index, idx_tup_read::text AS read FROM pg_stat_user_indexes WHERE schemaname = $1`, [schema]);
      return Object.fromEntries(rows.map((r) => [r.index, Number(r.read)]));
    };
    const flush = () => runInTransaction(dataSource, schema, async (tx) => void (await tx.query(`SELECT pg_stat_force_next_flush() WHERE $1::int = 1`, [1])));
    await flush();
    const before = await readBy();
    for (let i = 0; i < 20; i++) expect(await dataSource.query(lookup, [org, `k-${i + 1}`])).toHaveLength(1);
    await flush();
    const after = await readBy();

    // Twenty lookups read twenty index entries; the generic plan read 20,000 per lookup.
    expect(after.messages_idempotency_uidx - before.messages_idempotency_uidx).toBe(20);
    expect(after.messages_contact_idx - before.messages_contact_idx).toBe(0);
  });
});
