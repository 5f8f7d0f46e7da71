import pg from 'pg';
import { CONNECTION_PLAN_CACHE_MODE, FoldedQuery, type Statement, wantsGenericPlan } from './folded-query.js';
import { DataSource, type EntitySchema, type MigrationInterface, type ObjectType } from 'typeorm';

type EntityTarget = ObjectType<unknown> | EntitySchema<unknown>;
type MigrationClass = new () => MigrationInterface;

export interface ServiceDatabaseOptions {
  /** PostgreSQL URL. */
  url: string;
  /** The schema this service owns (prefix included); also its search_path. */
  schema: string;
  /** Explicit entity list (no globs: ESM). */
  entities: EntityTarget[];
  /** Explicit migration list, oldest first. */
  migrations: MigrationClass[];
  /** Pool size; default 10. */
  poolSize?: number;
}

/** Distinct statement texts one process prepares by name; past it, new texts run unnamed. */
const MAX_PREPARED_STATEMENTS = 400;
const statementNames = new Map<string, string>();

/** The name a parameterized statement text is prepared under, or undefined once the cap is reached. */
function statementName(text: string): string | undefined {
  const known = statementNames.get(text);
  if (known !== undefined || statementNames.size >= MAX_PREPARED_STATEMENTS) return known;
  const name = `tp_${statementNames.size}`;
  statementNames.set(text, name);
  return name;
}

/**
 * A pg client that prepares each parameterized statement once per connection (a named statement)
 * and afterwards only binds and executes it: the server skips parsing and analysis, the largest
 * part of its work for the short statements our services run many times a second. Statements
 * without parameters keep the simple protocol (several statements in one string keep working).
 * The names live per process and are bounded; texts built with a varying number of placeholders
 * add at most MAX_PREPARED_STATEMENTS of them.
 */
export class PreparingClient extends pg.Client {
  /**
   * Runs `steps` in one round trip (`FoldedQuery`), the parameterized ones prepared by name like
   * `query`'s; answers each step's result, in order. Rejects with the first failing step's error
   * (the later steps did not run).
   */
  queryFolded(steps: Statement[]): Promise<pg.QueryResult[]> {
    return new Promise((resolve, reject) => {
      // Through `query` (which passes it on): what wraps a client's queries sees this one too.
      void this.query(new FoldedQuery(steps, statementName, (err, results) => (err ? reject(err) : resolve(results!))));
    });
  }

  override query(config: unknown, values?: unknown, callback?: unknown): never {
    if (typeof config === 'string' && Array.isArray(values) && wantsGenericPlan({ sql: config, params: values })) {
      // A statement marked by `genericPlan`: with its plan settings around it, in one round trip.
      const result = this.queryFolded([{ sql: config, params: values }]).then((results) => results[0]!);
      if (typeof callback !== 'function') return result as never;
      result.then(
        (r) => (callback as (err: Error | null, r?: pg.QueryResult) => void)(null, r),
        (err: Error) => (callback as (err: Error) => void)(err),
      );
      return undefined as never;
    }
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0) {
      const name = statementName(config);
      if (name) return (super.query as (...args: unknown[]) => never)({ name, text: config, values }, callback);
    }
    return (super.query as (...args: unknown[]) => never)(config, values, callback);
  }
}

/**
 * A TypeORM data source bound to one service's schema. The connection's `search_path` is that
 * schema, so migrations and raw SQL use unqualified table names and a test can run the same
 * service in a schema of its own.
 */
export function createServiceDataSource(options: ServiceDatabaseOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    schema: options.schema,
    entities: options.entities,
    migrations: options.migrations,
    migrationsTableName: 'migrations',
    migrationsRun: false,
    synchronize: false,
    logging: false,
    extra: {
      max: options.poolSize ?? 10,
      // Custom plans only: a named statement otherwise switches to a generic plan after five runs,
      // chosen once from the statistics of that moment and kept until the table is analyzed again.
      // On a young table (every fresh install, and any database without autovacuum) messaging's
      // `messages WHERE organization_id = $1 AND idempotency_key = $2` took the organization's
      // index and read every message of the organization on each send. Parsing stays cached.
      options: `-c search_path=${quoteIdent(options.schema)},public -c plan_cache_mode=${CONNECTION_PLAN_CACHE_MODE}`,
      application_name: `touchpoint:${options.schema}`,
      // A connection asked for while every one is held by callers that each wait for a second one
      // would never come: fail after 30 s (the caller's error path runs) instead of hanging.
      connectionTimeoutMillis: 30_000,
      Client: PreparingClient,
    },
  });
}

/** Creates the schema if needed, then runs pending migrations in one transaction each. */
export async function migrateServiceSchema(dataSource: DataSource): Promise<string[]> {
  const schema = (dataSource.options as { schema?: string }).schema;
  if (schema) await dataSource.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
  const ran = await dataSource.runMigrations({ transaction: 'each' });
  return ran.map((m) => m.name);
}

/** Creates the database named in `url` if it does not exist (connecting to `postgres` to do so). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, '')) || 'postgres';
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
    } catch (err) {
      // Two processes racing to create it: the loser's duplicate is fine.
      if ((err as { code?: string }).code !== '42P04' && (err as { code?: string }).code !== '23505') throw err;
    }
    return true;
  } finally {
    await client.end();
  }
}

/** Quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
