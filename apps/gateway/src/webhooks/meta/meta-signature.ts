import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Whether `header` is Meta's signature of `rawBody`: `sha256=` + hex HMAC-SHA256 of the exact raw
 * bytes with the app secret (fixtures/README.md "Signature and authentication rules"). Compared in
 * constant time; a missing or malformed header is a mismatch.
 */
export function isValidMetaSignature(rawBody: Buffer | undefined, header: string | string[] | undefined, appSecret: string): boolean {
  if (!rawBody || typeof header !== 'string') return false;
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  if (!match) return false;
  const expected = createHmac('sha256', appSecret).update(rawBody).digest();
  const given = Buffer.from(match[1], 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Whether `given` (the challenge's `hub.verify_token`) is our verify token, in constant time: both
 * are hashed first, so neither their contents nor their lengths shape the comparison's timing.
 */
export function isMetaVerifyToken(given: unknown, verifyToken: string): boolean {
  if (typeof given !== 'string') return false;
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(verifyToken));
}
