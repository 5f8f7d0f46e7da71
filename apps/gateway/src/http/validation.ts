import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ValidateBy } from 'class-validator';
import { problemsOf } from '@touchpoint/config';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { FieldProblem } from '@touchpoint/database';
import { codePointLength } from '@touchpoint/text';

/**
 * The one validation pipe of the gateway: unknown fields are refused (not silently dropped), values
 * are converted to the DTO's types, and every failure is 400 `validation_failed` whose `details`
 * lists each bad field by its path (`scopes`, `graph.nodes.0.id`) with its problems.
 */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const details = flattenValidationErrors(errors);
      const summary = details.map((d) => d.field).join(', ');
      return new AppError(ErrorCode.ValidationFailed, `invalid request: ${summary}`, details);
    },
  });
}

/**
 * class-validator's error tree → one entry per field path. A field whose type is wrong lists that
 * problem alone, not also the ranges a value of the wrong type cannot be checked against.
 */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const problems = problemsOf(error);
    if (problems.length) out.push({ field, problems });
    if (error.children?.length) out.push(...flattenValidationErrors(error.children, field));
  }
  return out;
}

/**
 * At most `max` characters, counted in Unicode code points (`codePointLength` of libs/text), as the
 * services count the same field and as OpenAPI's `maxLength` means. class-validator's `MaxLength`
 * counts otherwise (it leaves out emoji variation selectors), so a value it passes could still be
 * refused one hop later. Problem: `<field> must be at most <max> characters`. A non-string is left
 * to `@IsString()`.
 */
export function MaxCodePoints(max: number): PropertyDecorator {
  return ValidateBy({
    name: 'maxCodePoints',
    constraints: [max],
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || codePointLength(value) <= max,
      defaultMessage: (args) => `${args?.property ?? 'value'} must be at most ${max} characters`,
    },
  });
}
