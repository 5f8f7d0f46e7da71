import { AppError, ErrorCode } from '@touchpoint/errors';

/** TypeORM answers an UPDATE/DELETE … RETURNING on Postgres with `[rows, count]`, an INSERT with the rows. */
export function returnedRows<T>(result: unknown): T[] {
  return Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? (result[0] as T[]) : (result as T[]);
}

/** ISO-8601 of a timestamp column, null kept. */
export function iso(value: Date | string | null | undefined): string | null {
  return value === null || value === undefined ? null : new Date(value).toISOString();
}

/** A keyset cursor: the sort instant and the row id of the last item of a page, base64url JSON. */
export interface Cursor {
  at: string;
  id: string;
}

export function encodeCursor(at: Date | string, id: string): string {
  return Buffer.from(JSON.stringify({ at: new Date(at).toISOString(), id })).toString('base64url');
}

/** @throws AppError invalid_cursor when the cursor is not one of ours */
export function decodeCursor(cursor: string | null | undefined): Cursor | null {
  if (!cursor) return null;
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Cursor;
    // Every row id is a UUID: a hand-made id must fail here, not as a type error in the query.
    if (typeof parsed.at !== 'string' || Number.isNaN(Date.parse(parsed.at)) || typeof parsed.id !== 'string' || !UUID.test(parsed.id)) throw new Error('shape');
    return parsed;
  } catch {
    throw new AppError(ErrorCode.InvalidCursor, 'the cursor is not valid');
  }
}

/** A page size between 1 and `max` (default 50). */
export function pageSize(limit: unknown, max = 200, fallback = 50): number {
  const n = Number(limit ?? fallback);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new AppError(ErrorCode.ValidationFailed, `limit must be an integer from 1 to ${max}`, { field: 'limit' });
  return n;
}

/** Throws validation_failed unless `value` is a non-empty string. */
export function requireString(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new AppError(ErrorCode.ValidationFailed, `${field} is required`, { field });
  return value;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Throws not_found unless `value` is a uuid (a malformed id names no row). */
export function requireId(value: unknown, what: string): string {
  if (typeof value !== 'string' || !UUID.test(value)) throw new AppError(ErrorCode.NotFound, `${what} not found`);
  return value;
}
