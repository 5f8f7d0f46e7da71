import { createHash } from 'node:crypto';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { canonicalJson } from '@touchpoint/text';
import { UUID_PATTERN } from './request-errors.js';

/**
 * Opaque keyset cursors (seed 002 "Fila": cursor pagination; a bad or stale cursor answers 422
 * `invalid_cursor`, start again without one), shared by every keyset-paged list.
 *
 * A cursor names the last row of a page by its immutable sort key `(created_at with microseconds,
 * kind, id)`, so the next page starts strictly after it: rows sharing a timestamp are neither
 * repeated nor skipped, and rows changing status between pages do not shift the boundary. It also
 * carries a digest of the filters it was issued for: replaying it with other filters is stale.
 */

/**
 * SQL for a timestamptz column as a cursor position (`YYYY-MM-DDTHH:MM:SS.ffffffZ`): the
 * microseconds a JS Date would drop, so a page boundary never falls between rows of one millisecond.
 */
export function cursorAtSql(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** Format version; a cursor of another version is stale. */
const CURSOR_VERSION = 1;

export interface CursorPosition {
  /** `YYYY-MM-DDTHH:MM:SS.ffffffZ` (Postgres microseconds). */
  createdAt: string;
  id: string;
  /** Source of the row where a list merges several (`enrollment`, `promise`). */
  kind?: string;
}

const digestOf = (filters: Record<string, unknown>): string =>
  createHash('sha256')
    .update(canonicalJson(Object.fromEntries(Object.entries(filters).map(([k, v]) => [k, v ?? null]))))
    .digest('base64url')
    .slice(0, 16);

/** Encodes the position after which the next page starts. */
export function encodeCursor(position: CursorPosition, filters: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, t: position.createdAt, i: position.id, k: position.kind, f: digestOf(filters) })).toString('base64url');
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export interface DecodeCursorOptions {
  /**
   * Also accept the unversioned cursors messaging's lists issued before this format: base64url
   * `{"at": ISO-8601 with milliseconds, "id": uuid}`, bound to no filters. Their position is the
   * same instant with microseconds `000`, which pages exactly as they did (the old comparison was
   * against that millisecond), so pages clients already hold keep working.
   */
  acceptUnversioned?: boolean;
}

/**
 * Decodes a cursor issued for the same filters.
 * @throws AppError invalid_cursor when it is malformed, of another version, or of other filters
 */
export function decodeCursor(cursor: string, filters: Record<string, unknown>, options: DecodeCursorOptions = {}): CursorPosition {
  let raw: { v?: unknown; t?: unknown; i?: unknown; k?: unknown; f?: unknown; at?: unknown; id?: unknown };
  try {
    if (!/^[A-Za-z0-9_-]{1,512}$/.test(cursor)) throw new Error('not base64url');
    raw = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor('the cursor is not one this API issued');
  }
  if (options.acceptUnversioned && raw && typeof raw === 'object' && raw.v === undefined) return unversionedPosition(raw);
  if (!raw || typeof raw !== 'object' || raw.v !== CURSOR_VERSION || typeof raw.t !== 'string' || !TIMESTAMP.test(raw.t) || typeof raw.i !== 'string' || !UUID_PATTERN.test(raw.i)) {
    throw invalidCursor('the cursor is malformed or from an older version');
  }
  if (raw.f !== digestOf(filters)) throw invalidCursor('the cursor was issued for other filters');
  return { createdAt: raw.t, id: raw.i, kind: typeof raw.k === 'string' ? raw.k : undefined };
}

/** The position of an unversioned (millisecond) cursor. @throws AppError invalid_cursor */
function unversionedPosition(raw: { at?: unknown; id?: unknown }): CursorPosition {
  const at = typeof raw.at === 'string' ? Date.parse(raw.at) : Number.NaN;
  if (Number.isNaN(at) || typeof raw.id !== 'string' || !UUID_PATTERN.test(raw.id)) throw invalidCursor('the cursor is malformed or from an older version');
  return { createdAt: new Date(at).toISOString().replace(/Z$/, '000Z'), id: raw.id };
}

/**
 * A page size from a request's `limit`: `fallback` when absent.
 * @throws AppError validation_failed (details `{field: 'limit'}`) unless an integer from 1 to `max`
 */
export function pageSize(limit: unknown, max = 200, fallback = 50): number {
  const n = Number(limit ?? fallback);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new AppError(ErrorCode.ValidationFailed, `limit must be an integer from 1 to ${max}`, { field: 'limit' });
  return n;
}

const invalidCursor = (why: string): AppError => new AppError(ErrorCode.InvalidCursor, `invalid cursor: ${why}; start again without one`);
