import { randomBytes } from 'node:crypto';
import { CredentialsCipher } from '../credentials.cipher.js';

describe(CredentialsCipher.name, () => {
  const sut = new CredentialsCipher(randomBytes(32).toString('base64'));

  it('round-trips secrets without leaving them readable', () => {
    const stored = sut.encrypt({ access_token: 'EAAG-secret' }, 'sender-1');
    expect(stored).not.toContain('EAAG');
    expect(sut.decrypt(stored, 'sender-1')).toEqual({ access_token: 'EAAG-secret' });
  });

  it('refuses a ciphertext moved to another sender', () => {
    expect(() => sut.decrypt(sut.encrypt({ access_token: 't' }, 'sender-1'), 'sender-2')).toThrow();
  });

  it('refuses a ciphertext made with another key', () => {
    const other = new CredentialsCipher(randomBytes(32).toString('base64'));
    expect(() => sut.decrypt(other.encrypt({ access_token: 't' }, 'sender-1'), 'sender-1')).toThrow();
  });

  it('refuses a key that is not 32 bytes', () => {
    expect(() => new CredentialsCipher(randomBytes(16).toString('base64'))).toThrow('32 bytes');
  });
});
