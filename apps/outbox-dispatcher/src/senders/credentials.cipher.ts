import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Format version prefix of an encrypted credential, so the scheme can change later. */
const VERSION = 'v1';

/**
 * Encrypts sender credentials at rest with AES-256-GCM. The stored text is
 * `v1.<iv>.<tag>.<ciphertext>` (base64 parts); the sender id is bound as associated data, so a
 * ciphertext copied onto another sender's row does not decrypt.
 */
export class CredentialsCipher {
  private readonly key: Buffer;

  /** @param keyBase64 32 bytes in base64 (OUTBOX_CREDENTIALS_KEY) */
  constructor(keyBase64: string) {
    this.key = Buffer.from(keyBase64, 'base64');
    if (this.key.length !== 32) throw new Error('OUTBOX_CREDENTIALS_KEY must decode to 32 bytes');
  }

  encrypt(secrets: Record<string, string>, senderId: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(senderId));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')].join('.');
  }

  /** @throws Error when the text was not made with this key for this sender */
  decrypt(stored: string, senderId: string): Record<string, string> {
    const [version, iv, tag, ciphertext] = stored.split('.');
    if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error('unknown credential format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(senderId));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as Record<string, string>;
  }
}
