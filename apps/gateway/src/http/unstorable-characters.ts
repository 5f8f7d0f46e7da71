import type { FastifyInstance } from 'fastify';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { FieldProblem } from '@touchpoint/database';
import { hasLoneSurrogate } from '@touchpoint/text';

/** The problem named for each field that holds a NUL. */
export const NUL_PROBLEM = 'must not contain a NUL character (U+0000)';

/** The problem named for each field that holds half of a UTF-16 surrogate pair without the other half. */
export const LONE_SURROGATE_PROBLEM = 'must not contain a lone surrogate (half of a UTF-16 pair, U+D800 to U+DFFF, such as a \\ud800 escape alone): it is not a character';

/** How deep the walk looks into a body; deeper values are the validation pipe's to refuse. */
const MAX_DEPTH = 64;

/**
 * Every place in `value` where a string (or an object key) holds what no field may hold, with the
 * problems `problemsOf` names for it, keyed by field path in the validation pipe's spelling (`name`,
 * `graph.nodes.0.id`); `prefix` names the root. One walk for every rule, iterative, so a deeply
 * nested body cannot exhaust the stack.
 */
function fieldProblems(value: unknown, problemsOf: (text: string) => string[], prefix: string, found = new Map<string, string[]>()): Map<string, string[]> {
  const note = (path: string, problems: string[]) => {
    if (problems.length > 0) found.set(path, [...(found.get(path) ?? []), ...problems]);
  };
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: prefix, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      note(path || '(body)', problemsOf(current));
      continue;
    }
    if (current === null || typeof current !== 'object' || depth >= MAX_DEPTH) continue;
    for (const [key, child] of Object.entries(current)) {
      const childPath = path ? `${path}.${key.replaceAll('\u0000', '\\0')}` : key.replaceAll('\u0000', '\\0');
      const keyProblems = problemsOf(key);
      if (keyProblems.length > 0) note(childPath, keyProblems);
      else stack.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
  return found;
}

/** The problems of one string: a NUL, a lone surrogate. */
function unstorable(text: string): string[] {
  const problems: string[] = [];
  if (text.includes('\u0000')) problems.push(NUL_PROBLEM);
  if (hasLoneSurrogate(text)) problems.push(LONE_SURROGATE_PROBLEM);
  return problems;
}

/** The fields of `value` (strings or object keys) that hold U+0000, sorted. */
export function nulFields(value: unknown, prefix = ''): string[] {
  return [...fieldProblems(value, (text) => (text.includes('\u0000') ? [NUL_PROBLEM] : []), prefix).keys()].sort();
}

/** The fields of `value` (strings or object keys) that hold a lone surrogate (`hasLoneSurrogate`), sorted. */
export function loneSurrogateFields(value: unknown, prefix = ''): string[] {
  return [...fieldProblems(value, (text) => (hasLoneSurrogate(text) ? [LONE_SURROGATE_PROBLEM] : []), prefix).keys()].sort();
}

/**
 * Refuses a NUL character (U+0000) or a lone surrogate in any path parameter, query parameter or
 * body string with 400 `validation_failed` naming each field and its problems, before guards and
 * handlers run. PostgreSQL cannot store U+0000 in `text` or `jsonb` (SQLSTATE 22021), and no field
 * of the API has a use for it; refusing it here, once, spares every service from meeting it. A lone
 * surrogate (JSON lets a client write `"a\ud800b"`) is half of a character: stored or sent, it
 * becomes U+FFFD, so the text the client gave would silently not be the text that went out.
 * Register it before `repairUnstorableCharacters`, which must only meet the exempt paths' bodies. Paths
 * under `exemptPrefixes` (the provider webhooks) are left alone: their payloads are signed as sent,
 * and what they hold is repaired or stripped by the gateway and the owning service.
 */
export function refuseUnstorableCharacters(fastify: FastifyInstance, exemptPrefixes: string[]): void {
  fastify.addHook('preValidation', (request, _reply, done) => {
    if (exemptPrefixes.some((prefix) => request.url.startsWith(prefix))) {
      done();
      return;
    }
    const problems = new Map<string, string[]>();
    for (const part of [request.params, request.query, request.body]) fieldProblems(part, unstorable, '', problems);
    if (problems.size === 0) {
      done();
      return;
    }
    const details: FieldProblem[] = [...problems].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([field, named]) => ({ field, problems: named }));
    done(new AppError(ErrorCode.ValidationFailed, `invalid request: ${details.map((d) => d.field).join(', ')}`, details));
  });
}
