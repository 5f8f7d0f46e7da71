import type { DataSource } from 'typeorm';
import type { Tx } from '@touchpoint/database';

/** Anything that runs SQL and answers rows: a transaction, or the pool for reads outside one. */
export type Queryable = Pick<Tx, 'query'>;

/** The data source as a Queryable (reads that need no transaction). */
export function poolOf(dataSource: DataSource): Queryable {
  return { query: async <T>(sql: string, params?: unknown[]) => (await dataSource.query(sql, params)) as T[] };
}
