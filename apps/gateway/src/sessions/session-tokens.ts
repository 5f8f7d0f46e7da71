import { Injectable } from '@nestjs/common';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Random bytes of a session token: 256 bits, so plain SHA-256 is a safe stored form (at least 32 bytes). */
export const SESSION_TOKEN_BYTES = 32;
/** A cookie value longer than this is not one of ours; it is refused before hashing. */
const MAX_TOKEN_LENGTH = 128;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]+$/;
/** Label of the HMAC that derives a session's CSRF token from its cookie token (ours). */
const CSRF_LABEL = 'touchpoint console csrf v1';

/**
 * Makes and checks the console's session tokens. The CSRF token is derived from the cookie token
 * (an HMAC keyed by it), so `GET /sessions/current` can give it back after a page reload while the
 * database keeps only hashes of both; knowing the CSRF token reveals nothing of the cookie.
 * Injected, so the randomness is an outside thing a test can replace.
 */
@Injectable()
export class SessionTokens {
  /** A new cookie token: 43 base64url characters. */
  generate(): string {
    return randomBytes(SESSION_TOKEN_BYTES).toString('base64url');
  }

  /** The CSRF token of the session whose cookie token is `token` (43 base64url characters). */
  csrfOf(token: string): string {
    return createHmac('sha256', token).update(CSRF_LABEL).digest('base64url');
  }

  /** SHA-256 of a token (32 bytes), the stored and looked-up value. */
  hash(token: string): Buffer {
    return createHash('sha256').update(token, 'utf8').digest();
  }

  /** Whether a cookie value could be one of our tokens at all. */
  looksValid(token: string): boolean {
    return token.length > 0 && token.length <= MAX_TOKEN_LENGTH && TOKEN_PATTERN.test(token);
  }

  /** Constant-time comparison of two hashes. */
  sameHash(a: Buffer, b: Buffer): boolean {
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
