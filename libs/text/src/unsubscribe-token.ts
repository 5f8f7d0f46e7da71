import { createHmac, timingSafeEqual } from 'node:crypto';

/** What an unsubscribe token names (seed 003 §4.7: organization + email). */
export interface UnsubscribeTokenClaims {
  organization_id: string;
  email: string;
}

const b64url = (buf: Buffer): string => buf.toString('base64url');

/**
 * A signed unsubscribe token for the "Unsubscribe: " line and the List-Unsubscribe header of an
 * email (seed 003 §4.6 "generate_unsubscribe_token", §4.7 "Unsubscribe link"):
 * `base64url(JSON {o, e})` + `.` + `base64url(HMAC-SHA256(secret, first part))`. The address is
 * lower-cased. It never expires: an old email's link must keep working.
 */
export function signUnsubscribeToken(claims: UnsubscribeTokenClaims, secret: string): string {
  const body = b64url(Buffer.from(JSON.stringify({ o: claims.organization_id, e: claims.email.trim().toLowerCase() }), 'utf8'));
  return `${body}.${b64url(createHmac('sha256', secret).update(body).digest())}`;
}

/**
 * The claims of a token whose signature matches (constant-time compare), or null for anything
 * else: a tampered body or signature, a malformed token, missing fields.
 */
export function verifyUnsubscribeToken(token: unknown, secret: string): UnsubscribeTokenClaims | null {
  if (typeof token !== 'string' || token.length > 2048) return null;
  const parts = token.split('.');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return null;
  const [body, signature] = parts as [string, string];
  const expected = createHmac('sha256', secret).update(body).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { o?: unknown; e?: unknown };
    if (typeof parsed.o !== 'string' || parsed.o === '' || typeof parsed.e !== 'string' || !parsed.e.includes('@')) return null;
    return { organization_id: parsed.o, email: parsed.e };
  } catch {
    return null;
  }
}
