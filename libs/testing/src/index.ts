import 'reflect-metadata';
import type { DynamicModule } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import amqplib from 'amqplib';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { BusNames } from '@touchpoint/bus';
import { loadConfig, type ServiceConfig } from '@touchpoint/config';
import { SERVICE_SCHEMA, SERVICES } from '@touchpoint/contracts';
import { ensureDatabase } from '@touchpoint/database';
import { startService, type StartOptions } from '@touchpoint/runtime';

/**
 * Test isolation (STYLE: each test file in its own schema and broker namespace, so files run in
 * parallel against the machine's real PostgreSQL and RabbitMQ).
 */

/** Database the suite runs in; created by test/global-setup.ts. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/touchpoint_test';
export const TEST_AMQP_URL = process.env.TEST_AMQP_URL ?? process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** An isolated world for one test file: a schema prefix and a bus namespace with the same name. */
export interface TestWorld {
  /** `t_<label>_<random>`: schema prefix (`<ns>_`) and bus namespace. */
  namespace: string;
  databaseUrl: string;
  amqpUrl: string;
  /** Env overrides that put a service in this world. */
  env: Record<string, string>;
  /** Builds a service config in this world (PORT 0, quiet logs, classic queues). */
  config<C extends ServiceConfig>(cls: new () => C, overrides?: Record<string, string>): C;
  /** Starts a service in-process; stopped by `close()`. */
  start(rootModule: DynamicModule, options?: StartOptions): Promise<NestFastifyApplication>;
  /** Raw SQL against the test database (qualify tables with `schema(service)`). */
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** The schema a service uses in this world. */
  schema(service: keyof typeof SERVICE_SCHEMA): string;
  /** Stops started services, drops the schemas and deletes the broker namespace. */
  close(): Promise<void>;
}

/** Creates a test world; call `close()` in `afterAll`. */
export async function createTestWorld(label: string): Promise<TestWorld> {
  const namespace = `t_${label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 20)}_${randomBytes(3).toString('hex')}`;
  // Benchmarks call this without Jest's global setup: on a fresh machine the database is not there yet.
  await ensureDatabase(TEST_DATABASE_URL);
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 3 });
  await pool.query(`CREATE TABLE IF NOT EXISTS public.test_namespaces (namespace text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())`);
  await pool.query(`INSERT INTO public.test_namespaces (namespace) VALUES ($1) ON CONFLICT DO NOTHING`, [namespace]);
  const apps: NestFastifyApplication[] = [];
  const env: Record<string, string> = {
    DATABASE_URL: TEST_DATABASE_URL,
    AMQP_URL: TEST_AMQP_URL,
    BUS_NAMESPACE: namespace,
    DB_SCHEMA_PREFIX: `${namespace}_`,
    BUS_QUEUE_TYPE: 'classic',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    BUS_RETRY_BASE_MS: '100',
    // Many services start per test file (and the black-box suite starts the whole platform): keep
    // each pool small so the suite stays under PostgreSQL's default max_connections (100).
    DB_POOL_SIZE: '4',
  };
  const world: TestWorld = {
    namespace,
    databaseUrl: TEST_DATABASE_URL,
    amqpUrl: TEST_AMQP_URL,
    env,
    config: (cls, overrides = {}) => loadConfig(cls, { ...env, ...overrides }),
    start: async (rootModule, options) => {
      const app = await startService(rootModule, options);
      apps.push(app);
      return app;
    },
    sql: async (text, params) => (await pool.query(text, params as unknown[])).rows,
    schema: (service) => `${namespace}_${SERVICE_SCHEMA[service]}`,
    close: async () => {
      for (const app of apps.reverse()) await app.close().catch(() => undefined);
      await dropNamespace(pool, TEST_AMQP_URL, namespace);
      await pool.end();
    },
  };
  return world;
}

/** The system catalogs that creating and dropping a test world's schemas leaves dead rows in. */
const CHURNED_CATALOGS = ['pg_attribute', 'pg_depend', 'pg_class', 'pg_type', 'pg_index', 'pg_constraint', 'pg_attrdef', 'pg_trigger', 'pg_sequence', 'pg_namespace', 'pg_statistic'];

/**
 * Vacuums the system catalogs of the test database. Every test file and benchmark creates and drops
 * its own schemas, thousands of tables a run; where autovacuum is off (this workplace's PostgreSQL
 * runs with it off) their dead rows pile up from run to run: measured here, pg_attribute held 228,000
 * dead rows against 713 live, and `bench:pipeline` used 22.4 CPU s per 1,000 sends, 17.4 after a
 * vacuum of these tables (0.8 s). Best effort: a role that may not vacuum a catalog skips it.
 */
export async function vacuumCatalogs(pool: pg.Pool): Promise<void> {
  await pool.query(`VACUUM (ANALYZE) ${CHURNED_CATALOGS.map((t) => `pg_catalog.${t}`).join(', ')}`).catch(() => undefined);
}

/** Drops a namespace's schemas and broker objects (also used by global setup for stale ones). */
export async function dropNamespace(pool: pg.Pool, amqpUrl: string, namespace: string): Promise<void> {
  const schemas = await pool.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE $1`, [`${namespace}\\_%`]);
  for (const { nspname } of schemas.rows) await pool.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
  await pool.query(`DELETE FROM public.test_namespaces WHERE namespace = $1`, [namespace]);
  await deleteBusNamespace(amqpUrl, namespace).catch(() => undefined);
}

/** Deletes every queue and exchange the platform declares under a namespace. */
export async function deleteBusNamespace(amqpUrl: string, namespace: string, extraServices: string[] = []): Promise<void> {
  const conn = await amqplib.connect(amqpUrl);
  try {
    for (const service of [...SERVICES, 'sandbox', 'test', ...extraServices]) {
      const names = new BusNames(namespace, service);
      const queues = [names.queue, names.deadLetterQueue, names.rpcQueue, ...Array.from({ length: 20 }, (_, i) => names.retryQueue(i + 1))];
      for (const q of queues) {
        // A failed delete closes the channel, so each gets its own.
        const ch = await conn.createChannel();
        ch.on('error', () => undefined);
        await ch.deleteQueue(q).catch(() => undefined);
        await ch.close().catch(() => undefined);
      }
    }
    const ch = await conn.createChannel();
    ch.on('error', () => undefined);
    const names = new BusNames(namespace, 'x');
    await ch.deleteQueue(names.unroutedQueue).catch(() => undefined);
    await ch.deleteExchange(names.eventsExchange).catch(() => undefined);
    await ch.deleteExchange(names.unroutedExchange).catch(() => undefined);
    await ch.close().catch(() => undefined);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

export * from './barriers.js';
export * from './builders.js';
export * from './tcp-proxy.js';
export * from './fakes.js';
export * from './cli.js';
export * from './ports.js';
export * from './explain-plan.js';
