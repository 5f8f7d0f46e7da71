import { AppError, ErrorCode } from '@touchpoint/errors';
import { codePointLength } from '@touchpoint/text';

/**
 * The errors every service answers for a request that names no row or carries a bad field, so
 * each says "not found" and "invalid field" the same way.
 */

/** Matches a canonical uuid (any version); an id that does not look like one names no row. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a uuid string. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_PATTERN.test(value);

/** One invalid field, in the shape the gateway's validation pipe uses for `details`. */
export interface FieldProblem {
  field: string;
  problems: string[];
}

/** 404 `not_found` for a resource of this tenant or of another one: never say which (DESIGN §3). */
export function notFound(what: string): AppError {
  return new AppError(ErrorCode.NotFound, `${what} not found`);
}

/** 400 `validation_failed` naming one field, details `[{field, problems: [problem]}]`. */
export function invalidField(field: string, problem: string): AppError {
  return new AppError(ErrorCode.ValidationFailed, `${field}: ${problem}`, [{ field, problems: [problem] } satisfies FieldProblem]);
}

/**
 * `value` when it is a uuid.
 * @throws AppError not_found (`<what> not found`) otherwise: a malformed id names no row
 */
export function requireId(value: unknown, what: string): string {
  if (!isUuid(value)) throw notFound(what);
  return value;
}

/**
 * `value` when it is a non-blank string of at most `maxChars` code points (no limit when omitted).
 * @throws AppError validation_failed `<field> is required`, details `{field}`, otherwise
 */
export function requireString(value: unknown, field: string, maxChars?: number): string {
  if (typeof value !== 'string' || value.trim() === '' || (maxChars !== undefined && codePointLength(value) > maxChars)) throw new AppError(ErrorCode.ValidationFailed, `${field} is required`, { field });
  return value;
}
