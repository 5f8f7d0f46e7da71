import type { DataSource } from 'typeorm';
import type { Tx } from '@touchpoint/database';

/** Anything that runs SQL: a transaction, or the pool for reads outside one. */
export type Queryable = Pick<Tx, 'query'>;

/** The data source as a Queryable (reads that need no transaction). */
export function poolOf(dataSource: DataSource): Queryable {
  return { query: async <T>(sql: string, params?: unknown[]) => (await dataSource.query(sql, params)) as T[] };
}

/**
 * Runs a statement and answers its rows. TypeORM's raw query answers `[rows, rowCount]` for
 * UPDATE and DELETE (RETURNING or not) and plain rows otherwise; this hides the difference.
 */
export async function rowsOf<T = Record<string, unknown>>(db: Queryable, sql: string, params?: unknown[]): Promise<T[]> {
  const result = (await db.query(sql, params)) as unknown;
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}
