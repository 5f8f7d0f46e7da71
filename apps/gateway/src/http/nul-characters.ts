import type { FastifyInstance } from 'fastify';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { FieldProblem } from '@touchpoint/database';

/** The problem named for each field that holds a NUL. */
export const NUL_PROBLEM = 'must not contain a NUL character (U+0000)';

/** How deep the walk looks into a body; deeper values are the validation pipe's to refuse. */
const MAX_DEPTH = 64;

/**
 * Every place in `value` where a string (or an object key) holds U+0000, as field paths in the
 * validation pipe's spelling (`name`, `graph.nodes.0.id`); `prefix` names the root. Iterative, so
 * a deeply nested body cannot exhaust the stack.
 */
export function nulFields(value: unknown, prefix = ''): string[] {
  const found: string[] = [];
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: prefix, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      if (current.includes('\u0000')) found.push(path || '(body)');
      continue;
    }
    if (current === null || typeof current !== 'object' || depth >= MAX_DEPTH) continue;
    for (const [key, child] of Object.entries(current)) {
      const childPath = path ? `${path}.${key.replaceAll('\u0000', '\\0')}` : key.replaceAll('\u0000', '\\0');
      if (key.includes('\u0000')) found.push(childPath);
      else stack.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
  return found.sort();
}

/**
 * Refuses a NUL character (U+0000) in any path parameter, query parameter or body string with 400
 * `validation_failed` naming each field, before guards and handlers run. PostgreSQL cannot store
 * U+0000 in `text` or `jsonb` (SQLSTATE 22021), and no field of the API has a use for it; refusing
 * it here, once, spares every service from meeting it. Paths under `exemptPrefixes` (the provider
 * webhooks) are left alone: their payloads are signed as sent, and the owning service strips NULs
 * from what it stores.
 */
export function refuseNulCharacters(fastify: FastifyInstance, exemptPrefixes: string[]): void {
  fastify.addHook('preValidation', async (request) => {
    if (exemptPrefixes.some((prefix) => request.url.startsWith(prefix))) return;
    const fields = [...nulFields(request.params), ...nulFields(request.query), ...nulFields(request.body)];
    if (fields.length === 0) return;
    const details: FieldProblem[] = fields.map((field) => ({ field, problems: [NUL_PROBLEM] }));
    throw new AppError(ErrorCode.ValidationFailed, `invalid request: ${fields.join(', ')}`, details);
  });
}
