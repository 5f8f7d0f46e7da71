import { Injectable } from '@nestjs/common';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { API_KEY_SECRET_PREFIX } from '@touchpoint/contracts';

/** Random bytes in a secret: 256 bits, so hashing with plain SHA-256 is enough (no password stretching needed). */
export const API_KEY_SECRET_BYTES = 32;
/** Characters of the secret kept in clear as a hint (prefix + 7), so a person can tell keys apart. */
const HINT_LENGTH = API_KEY_SECRET_PREFIX.length + 7;
/** A longer bearer value is not one of ours; refuse it before hashing. */
const MAX_SECRET_LENGTH = 256;

/**
 * Makes and checks API key secrets (DESIGN §3: random, shown once, stored hashed). Injected, so the
 * randomness is an outside thing a test can replace.
 */
@Injectable()
export class ApiKeySecrets {
  /** A new secret: `tp_` + 43 base64url characters. */
  generate(): string {
    return `${API_KEY_SECRET_PREFIX}${randomBytes(API_KEY_SECRET_BYTES).toString('base64url')}`;
  }

  /** SHA-256 of the secret (32 bytes), the value stored and looked up. */
  hash(secret: string): Buffer {
    return createHash('sha256').update(secret, 'utf8').digest();
  }

  /** The first characters of a secret, safe to show in listings. */
  hint(secret: string): string {
    return secret.slice(0, HINT_LENGTH);
  }

  /** Whether a bearer value could be one of our secrets at all. */
  looksValid(secret: string): boolean {
    return secret.startsWith(API_KEY_SECRET_PREFIX) && secret.length <= MAX_SECRET_LENGTH;
  }

  /** Constant-time comparison of two hashes. */
  sameHash(a: Buffer, b: Buffer): boolean {
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
