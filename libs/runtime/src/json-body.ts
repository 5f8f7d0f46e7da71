import { invalidField } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';

/** What a key or escape must contain for the forbidden-key walk to be worth it. */
const MAY_HOLD_FORBIDDEN_KEY = /proto|constructor|\\u/;

/**
 * Parses a JSON request body (the `application/json` content-type parser of every service).
 *
 * - An empty body (no bytes, e.g. `Content-Length: 0`) is no body: `undefined`, as a request
 *   without `Content-Type`. Many clients send `Content-Type: application/json` always.
 * - A key that would reach an object's prototype when copied (`__proto__`, or `prototype` under
 *   `constructor`, at any depth) is refused by name: the JSON is valid, the field is not.
 *
 * @returns the parsed value, or `undefined` for an empty body
 * @throws AppError invalid_json (the bytes are not JSON, whitespace only included),
 *   validation_failed (details `[{ field: '__proto__' | 'a.0.__proto__' | 'constructor.prototype', problems }]`)
 */
export function parseJsonBody(body: Buffer | string): unknown {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError(ErrorCode.InvalidJson, 'the request body is not valid JSON');
  }
  if (value !== null && typeof value === 'object' && MAY_HOLD_FORBIDDEN_KEY.test(text)) {
    const field = forbiddenKeyPath(value);
    if (field !== null) throw invalidField(field, 'is a forbidden key');
  }
  return value;
}

/** The path of the first forbidden key in `root` (depth-first, without recursion), or null. */
function forbiddenKeyPath(root: object): string | null {
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    const at = (key: string) => (path ? `${path}.${key}` : key);
    if (Object.hasOwn(node, '__proto__')) return at('__proto__');
    const ctor = Object.hasOwn(node, 'constructor') ? (node as { constructor: unknown }).constructor : undefined;
    if (ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype')) return at('constructor.prototype');
    for (const [key, child] of Object.entries(node)) if (child !== null && typeof child === 'object') stack.push([child, at(key)]);
  }
  return null;
}
