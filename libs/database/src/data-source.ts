import pg from 'pg';
import { DataSource, type EntitySchema, type MigrationInterface } from 'typeorm';

type EntityTarget = Function | EntitySchema<unknown>;
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
      options: `-c search_path=${quoteIdent(options.schema)},public`,
      application_name: `touchpoint:${options.schema}`,
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
