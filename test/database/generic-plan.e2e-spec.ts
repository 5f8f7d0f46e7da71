import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createServiceDataSource, genericPlan, PreparingClient, runInTransaction } from '@touchpoint/database';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';

/**
 * `genericPlan`: a marked statement runs on a generic plan, planned once per connection, built with
 * sequential scans priced out; every other statement keeps a custom plan, and the connection's
 * settings are back as they were after the marked one, whatever happened to it.
 */
describe('service data source: statements marked for a generic plan', () => {
  let world: TestWorld;
  let dataSource: DataSource;
  let schema: string;

  beforeAll(async () => {
    world = await createTestWorld('generic_plan');
    // Messaging's own tables, migrated and empty (never analyzed), as on a fresh install.
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

  const settings = async () => (await dataSource.query(`SELECT current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') AS seqscan`))[0] as { mode: string; seqscan: string };
  /** Plans made so far for the connection's prepared statement of `text` (one connection: poolSize 1). */
  const plans = async (text: string) => {
    const rows = await dataSource.query(`SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE statement = $1`, [text]);
    return rows[0] as { generic: number; custom: number } | undefined;
  };

  it('runs a marked statement on one generic plan and an unmarked one on a custom plan per run, and leaves the connection on custom plans', async () => {
    const marked = genericPlan(`SELECT count(*)::int AS n FROM messages WHERE id = ANY($1::uuid[])`);
    const plain = `SELECT count(*)::int AS n FROM messages WHERE id = ANY($1::uuid[]) AND $2::int = 2`;
    for (let i = 0; i < 3; i++) {
      expect(await dataSource.query(marked, [[randomUUID()]])).toEqual([{ n: 0 }]);
      expect(await dataSource.query(plain, [[randomUUID()], 2])).toEqual([{ n: 0 }]);
    }
    expect(await plans(marked)).toEqual({ generic: 3, custom: 0 });
    expect(await plans(plain)).toEqual({ generic: 0, custom: 3 });
    expect(await settings()).toEqual({ mode: 'force_custom_plan', seqscan: 'on' });
  });

  it('answers each statement of a transaction its own rows, marked or not, and restores the settings inside it', async () => {
    const seen = await runInTransaction(dataSource, schema, async (tx) => {
      const a = await tx.query<{ v: number }>(`SELECT $1::int AS v`, [1]);
      const b = await tx.query<{ v: number; mode: string; seqscan: string }>(genericPlan(`SELECT $1::int AS v, current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') AS seqscan`), [2]);
      const c = await tx.query<{ mode: string; seqscan: string }>(`SELECT current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') AS seqscan WHERE $1::int = 1`, [1]);
      return { a, b, c };
    });
    expect(seen.a).toEqual([{ v: 1 }]);
    // The marked statement ran under the generic settings; the next one under the connection's own.
    expect(seen.b).toEqual([{ v: 2, mode: 'force_generic_plan', seqscan: 'off' }]);
    expect(seen.c).toEqual([{ mode: 'force_custom_plan', seqscan: 'on' }]);
  });

  it('folds marked and unmarked steps in one round trip, answering them in order, one settings pair per run of marked steps', async () => {
    const client = (await (dataSource.driver as unknown as { master: { connect(): Promise<[PreparingClient, () => void]> } }).master.connect()) as unknown as PreparingClient & { release(): void };
    try {
      const results = await client.queryFolded([
        { sql: `SELECT $1::int AS v`, params: [1] },
        { sql: genericPlan(`SELECT $1::int AS v`), params: [2] },
        { sql: genericPlan(`SELECT $1::int AS v, $2::int AS w`), params: [3, 4] },
        { sql: `SELECT $1::int AS v, current_setting('plan_cache_mode') AS mode`, params: [5] },
      ]);
      expect(results.map((r) => r.rows)).toEqual([[{ v: 1 }], [{ v: 2 }], [{ v: 3, w: 4 }], [{ v: 5, mode: 'force_custom_plan' }]]);
    } finally {
      client.release();
    }
  });

  it('parses each named statement once per round trip, on a connection that has none yet: a statement twice, two runs of marked steps', async () => {
    const fresh = createServiceDataSource({ url: world.databaseUrl, schema, entities: [], migrations: [], poolSize: 1 });
    await fresh.initialize();
    try {
      const client = (await (fresh.driver as unknown as { master: { connect(): Promise<unknown> } }).master.connect()) as PreparingClient & { release(): void };
      try {
        const twice = `SELECT $1::int + 100 AS v`;
        const results = await client.queryFolded([
          { sql: twice, params: [1] },
          { sql: genericPlan(`SELECT $1::int AS v`), params: [2] },
          { sql: twice, params: [3] },
          { sql: genericPlan(`SELECT $1::int * 10 AS v`), params: [4] },
        ]);
        expect(results.map((r) => r.rows)).toEqual([[{ v: 101 }], [{ v: 2 }], [{ v: 103 }], [{ v: 40 }]]);
        expect(((await client.query(`SELECT current_setting('plan_cache_mode') AS mode WHERE $1::int = 1`, [1])) as unknown as { rows: unknown[] }).rows).toEqual([{ mode: 'force_custom_plan' }]);
      } finally {
        client.release();
      }
    } finally {
      await fresh.destroy();
    }
  });

  it('a marked statement that fails rolls its transaction back and leaves the connection on custom plans', async () => {
    const id = randomUUID();
    await expect(
      runInTransaction(dataSource, schema, async (tx) => {
        await tx.query(`INSERT INTO contacts (id, organization_id, name, created_at, updated_at) VALUES ($1, $2, 'Ana', now(), now())`, [id, 'org-generic']);
        await tx.query(genericPlan(`SELECT 1 / ($1::int - 1) AS boom`), [1]);
      }),
    ).rejects.toThrow(/division by zero/);
    expect(await dataSource.query(`SELECT id FROM contacts WHERE id = $1`, [id])).toEqual([]);
    expect(await settings()).toEqual({ mode: 'force_custom_plan', seqscan: 'on' });
    // Outside a transaction too (the settings are local to the implicit one up to the Sync).
    await expect(dataSource.query(genericPlan(`SELECT 1 / ($1::int - 1) AS boom`), [1])).rejects.toThrow(/division by zero/);
    expect(await settings()).toEqual({ mode: 'force_custom_plan', seqscan: 'on' });
  });

  it('a generic plan made on an empty table still reads the grown table through its index (scans and hash joins priced out)', async () => {
    const org = randomUUID();
    const lookup = genericPlan(`SELECT m.id FROM unnest($2::text[]) AS k(key) JOIN messages m ON m.organization_id = $1 AND m.idempotency_key = k.key`);
    // Planned while the table is empty and never analyzed: a whole-table scan is the cheapest plan then.
    for (let i = 0; i < 3; i++) expect(await dataSource.query(lookup, [org, [`x-${i}`]])).toEqual([]);
    await runInTransaction(dataSource, schema, async (tx) => {
      await tx.query(`SET LOCAL session_replication_role = replica`);
      await tx.query(
        `INSERT INTO messages (organization_id, conversation_id, instance_id, contact_id, channel, direction, sender_type, body, status, idempotency_key, created_at)
         SELECT $1, gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'whatsapp', 'outbound', 'followup', 'Oi!', 'sent', 'k-' || g, now() FROM generate_series(1, 20000) g`,
        [org],
      );
    });
    const reads = async () => {
      await dataSource.query(`SELECT pg_stat_force_next_flush() WHERE $1::int = 1`, [1]);
      const [row] = await world.sql<{ seq: string; idx: string }>(`SELECT seq_tup_read::text AS seq, idx_tup_fetch::text AS idx FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'messages'`, [schema]);
      return { seq: Number(row!.seq), idx: Number(row!.idx) };
    };
    const before = await reads();
    for (let i = 0; i < 10; i++) expect(await dataSource.query(lookup, [org, [`k-${i + 1}`, `k-${i + 100}`]])).toHaveLength(2);
    const after = await reads();
    expect(await plans(lookup)).toEqual({ generic: 13, custom: 0 });
    expect(after.seq - before.seq).toBe(0);
    expect(after.idx - before.idx).toBe(20);
  });
});
