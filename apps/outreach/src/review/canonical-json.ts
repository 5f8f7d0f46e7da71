import { createHash } from 'node:crypto';
import { canonicalJson } from '@touchpoint/text';

/** `approved_hash`: SHA-256 hex of the canonical JSON (seed 003 §4.5) of the approved payload, as UTF-8 bytes. */
export function approvedHash(payload: unknown): string {
  return createHash('sha256').update(canonicalJson(payload), 'utf8').digest('hex');
}
