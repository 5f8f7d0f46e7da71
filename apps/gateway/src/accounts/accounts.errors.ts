import { AppError, ErrorCode } from '@touchpoint/errors';

/** One invalid field, in the shape the HTTP validation pipe also uses for `details`. */
export interface FieldProblem {
  field: string;
  problems: string[];
}

/** `validation_failed` naming one field; the CLI and the HTTP routes show the same details. */
export function invalidField(field: string, problem: string): AppError {
  return new AppError(ErrorCode.ValidationFailed, `${field}: ${problem}`, [{ field, problems: [problem] } satisfies FieldProblem]);
}

/** `not_found` for a resource of this tenant (or of another one: never say which, DESIGN §3). */
export function notFound(what: string): AppError {
  return new AppError(ErrorCode.NotFound, `${what} not found`);
}

/** Postgres SQLSTATE of an invalid text representation (a malformed uuid reached a query). */
export const PG_INVALID_TEXT_REPRESENTATION = '22P02';
/** Postgres SQLSTATE of a foreign key violation. */
export const PG_FOREIGN_KEY_VIOLATION = '23503';

/** Matches a canonical uuid (any version); ids that do not look like one cannot exist. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
