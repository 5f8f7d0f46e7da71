import { configure } from 'safe-stable-stringify';

/** safe-stable-stringify with object keys sorted (its default) and no `[Circular]` stand-in. */
const stringify = configure({ deterministic: true, circularValue: TypeError });

/**
 * Canonical JSON (seed 003 §4.5): object keys sorted at every level (UTF-16 code-unit order), no
 * spaces, UTF-8 text as is (no `\u` escapes beyond what JSON requires). Arrays keep their order;
 * `undefined` members are dropped from objects and written `null` in arrays, as JSON.stringify
 * does; `undefined` alone is `null`. The one writer of JSON that is hashed or compared (approved
 * payloads, request fingerprints, cursor filters).
 * @throws TypeError on a circular structure
 */
export function canonicalJson(value: unknown): string {
  return stringify(value) ?? 'null';
}
