import { type FieldProblem, isUuid } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { codePointLength } from '@touchpoint/text';

/**
 * Checks of RPC inputs at the followups edge. The gateway validates its DTOs first; these keep the
 * service safe for any other caller (another service, the CLI) and turn bad ids into
 * 400 `validation_failed` rather than a database error.
 */

/** Collects field problems and throws them all at once. */
export class RequestChecks {
  private readonly problems: FieldProblem[] = [];

  constructor(private readonly input: Record<string, unknown>) {}

  private add(field: string, problem: string): void {
    this.problems.push({ field, problems: [problem] });
  }

  uuid(field: string, optional = false): this {
    const v = this.input[field];
    if (v === undefined || v === null) {
      if (!optional) this.add(field, `${field} is required`);
    } else if (!isUuid(v)) this.add(field, `${field} must be a UUID`);
    return this;
  }

  int(field: string, min: number, max: number, optional = false): this {
    const v = this.input[field];
    if (v === undefined || v === null) {
      if (!optional) this.add(field, `${field} is required`);
    } else if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) this.add(field, `${field} must be an integer from ${min} to ${max}`);
    return this;
  }

  string(field: string, min: number, max: number, optional = false): this {
    const v = this.input[field];
    if (v === undefined || v === null) {
      if (!optional) this.add(field, `${field} is required`);
    } else if (typeof v !== 'string' || v.trim().length < min || codePointLength(v) > max) this.add(field, `${field} must be ${min} to ${max} characters`);
    return this;
  }

  oneOf(field: string, values: readonly string[], optional = false): this {
    const v = this.input[field];
    if (v === undefined || v === null) {
      if (!optional) this.add(field, `${field} is required`);
    } else if (!values.includes(v as string)) this.add(field, `${field} must be one of ${values.join(', ')}`);
    return this;
  }

  custom(field: string, problems: string[]): this {
    for (const p of problems) this.add(field, p);
    return this;
  }

  /** @throws AppError validation_failed listing every problem */
  done(): void {
    if (this.problems.length) throw new AppError(ErrorCode.ValidationFailed, `invalid request: ${this.problems.map((p) => p.field).join(', ')}`, this.problems);
  }
}

/** Starts checking an RPC input. */
export const check = (input: unknown): RequestChecks => new RequestChecks((input ?? {}) as Record<string, unknown>);

/**
 * A revision-guarded write found no row at `expected`: 409 `revision_conflict` with the current
 * revision, so the client can reload (seed 002 `expected_revision`).
 */
export function revisionConflict(what: string, expected: number, current: number): AppError {
  return new AppError(ErrorCode.RevisionConflict, `the ${what} changed (revision ${current}, expected ${expected}); reload and retry`, { expected_revision: expected, current_revision: current });
}
