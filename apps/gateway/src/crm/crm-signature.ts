import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header of a CRM webhook delivery: `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const CRM_SIGNATURE_HEADER = 'x-touchpoint-signature';

/** Why a CRM webhook's signature was refused (`ok` when it was not). */
export type CrmSignatureVerdict = 'ok' | 'missing' | 'malformed' | 'mismatch' | 'stale';

/** The header value a CRM sends for `rawBody` at `unixSeconds` (the CRM's side; tests sign with it). */
export function signCrmWebhook(rawBody: Buffer | string, secret: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.`).update(rawBody).digest('hex')}`;
}

/**
 * Checks a CRM webhook's signature: an HMAC-SHA256, with the configured secret, of the signed time,
 * a dot and the exact raw body, compared in constant time. The time is inside the HMAC, so a
 * captured delivery cannot be re-dated; one older (or newer) than `toleranceS` seconds is `stale`,
 * and within the window the CRM's event id makes a replay a no-op.
 * @param nowMs our clock, ms since the epoch (UTC)
 */
export function verifyCrmSignature(rawBody: Buffer | undefined, header: string | string[] | undefined, secret: string, nowMs: number, toleranceS: number): CrmSignatureVerdict {
  if (typeof header !== 'string' || header.trim() === '') return 'missing';
  const parts = new Map(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = parts.get('t');
  const v1 = parts.get('v1');
  if (!rawBody || !t || !/^\d{1,12}$/.test(t) || !v1 || !/^[0-9a-f]{64}$/i.test(v1)) return 'malformed';
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  const given = Buffer.from(v1, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'mismatch';
  if (Math.abs(nowMs / 1000 - Number(t)) > toleranceS) return 'stale';
  return 'ok';
}
