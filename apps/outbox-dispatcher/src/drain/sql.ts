import type { Tx } from '@touchpoint/database';

/**
 * Runs a statement and returns its rows. TypeORM answers an UPDATE or DELETE as
 * `[rows, affectedCount]` rather than the rows, so `RETURNING` results are unwrapped here.
 */
export async function rowsOf<T = Record<string, unknown>>(tx: Tx, sql: string, params: unknown[] = []): Promise<T[]> {
  const result = (await tx.query(sql, params)) as unknown;
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}
