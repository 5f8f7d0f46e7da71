import type { Tx } from '@touchpoint/database';

/** Anything that runs SQL: a transaction or the data source's manager. */
export interface Db {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

/** The rows of a statement: TypeORM answers an UPDATE/DELETE … RETURNING with `[rows, count]`. */
export async function rowsOf<T>(db: Db | Tx, sql: string, params: unknown[] = []): Promise<T[]> {
  const result: unknown = await db.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}

/** ISO-8601 of a timestamp column, null kept. */
export function iso(value: Date | string | null | undefined): string | null {
  return value === null || value === undefined ? null : new Date(value).toISOString();
}

/** Postgres SQLSTATE of a unique violation. */
export const PG_UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } };
  const code = e?.code ?? e?.driverError?.code;
  const name = e?.constraint ?? e?.driverError?.constraint;
  return code === PG_UNIQUE_VIOLATION && (!constraint || name === constraint);
}
