import type { DataSource } from 'typeorm';
import type { Tx } from './transaction.js';

/**
 * The one way services run SQL (README "SQL: the one way"): every statement lives in its feature's
 * repository and runs through a `Queryable`, which is either the unit of work's transaction (`Tx`)
 * or, for reads that need none, the pool (`poolOf`). `rowsOf` answers the rows of any statement.
 */

/** Anything that runs SQL: a transaction (`Tx`), or the pool for reads outside one (`poolOf`). */
export type Queryable = Pick<Tx, 'query'>;

/**
 * The rows of a raw query result. TypeORM's `DataSource.query` and `EntityManager.query` answer an
 * UPDATE or DELETE (RETURNING or not) on PostgreSQL as `[rows, affectedCount]` and every other
 * statement as the rows; `Tx.query` always answers the rows.
 */
function returnedRows<T>(result: unknown): T[] {
  return Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? (result[0] as T[]) : (result as T[]);
}

/**
 * A row read as JSON (`to_jsonb(t)`, to carry a second table's row beside the first) with its
 * timestamp columns back to Dates: JSON gives them as ISO text. A null row stays null.
 * @param timestamps the row's timestamptz columns; a null or absent one stays null
 */
export function rowFromJson<T>(json: Record<string, unknown> | null, timestamps: readonly (keyof T & string)[]): T | null {
  if (!json) return null;
  const row: Record<string, unknown> = { ...json };
  for (const key of timestamps) row[key] = typeof json[key] === 'string' ? new Date(json[key]) : (json[key] ?? null);
  return row as T;
}

/**
 * Runs one parameterised statement and answers its rows (also of an UPDATE or DELETE … RETURNING),
 * whichever `Queryable` runs it.
 */
export async function rowsOf<T = Record<string, unknown>>(db: Queryable, sql: string, params: unknown[] = []): Promise<T[]> {
  return returnedRows<T>(await db.query(sql, params));
}

/** A pg result, or the results of several statements sent in one string (no parameters). */
type PoolResult = { rows: unknown[] } | { rows: unknown[] }[];

/**
 * The data source as a `Queryable`, for reads that need no transaction; answers rows like `Tx`.
 * Statements go to the data source's own pg pool (the same connections, search_path and prepared
 * statements as `runInTransaction`), not through TypeORM's query runner, which cost as much CPU
 * per statement as a short indexed read itself (the API key lookup of every gateway request).
 * A data source without a pg pool (a test's fake) is asked through its `query`.
 */
export function poolOf(dataSource: DataSource): Queryable {
  return {
    query: async <T>(sql: string, params?: unknown[]) => {
      const pool = (dataSource.driver as { master?: { query(sql: string, params?: unknown[]): Promise<PoolResult> } } | undefined)?.master;
      if (!pool) return returnedRows<T>(await dataSource.query(sql, params));
      const result = await pool.query(sql, params);
      return (Array.isArray(result) ? (result[result.length - 1]?.rows ?? []) : result.rows) as T[];
    },
  };
}

/** ISO-8601 (UTC, milliseconds) of a timestamp column; null and undefined answer null. */
export function iso(value: Date | string | null | undefined): string | null {
  return value === null || value === undefined ? null : new Date(value).toISOString();
}

/** PostgreSQL SQLSTATE of a unique violation. */
export const PG_UNIQUE_VIOLATION = '23505';
/** PostgreSQL SQLSTATE of a foreign key violation. */
export const PG_FOREIGN_KEY_VIOLATION = '23503';

/**
 * Whether `err` (pg's error, or TypeORM's QueryFailedError around it) is a unique violation, of
 * `constraint` when one is named.
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } } | null | undefined;
  const code = e?.code ?? e?.driverError?.code;
  const name = e?.constraint ?? e?.driverError?.constraint;
  return code === PG_UNIQUE_VIOLATION && (!constraint || name === constraint);
}
