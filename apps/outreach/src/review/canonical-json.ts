import { createHash } from 'node:crypto';

/**
 * Canonical JSON (seed 003 §4.5): object keys sorted at every level, no spaces, UTF-8 text as is
 * (no `\u` escapes beyond what JSON requires). Arrays keep their order; `undefined` members are
 * dropped, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/** `approved_hash`: SHA-256 hex of the canonical JSON of the approved payload, as UTF-8 bytes. */
export function approvedHash(payload: unknown): string {
  return createHash('sha256').update(canonicalJson(payload), 'utf8').digest('hex');
}
