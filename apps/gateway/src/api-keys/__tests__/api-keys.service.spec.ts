import { AppError } from '@touchpoint/errors';
import { ApiKeySecrets } from '../api-key-secrets.js';
import { parseScopes } from '../api-keys.service.js';

describe('ApiKeysService', () => {
  describe('parseScopes', () => {
    it.each([
      [['admin'], ['admin']],
      [
        ['agents:write', 'agents:read'],
        ['agents:read', 'agents:write'],
      ],
      [
        ['messaging:read', ' messaging:read ', 'outreach:write'],
        ['outreach:write', 'messaging:read'],
      ],
    ])('accepts %j as %j (deduplicated, in canonical order)', (input, expected) => {
      expect(parseScopes(input)).toEqual(expected);
    });

    it.each([
      ['empty', []],
      ['blank', ['  ']],
      ['unknown', ['agents:read', 'root']],
      ['wrong case', ['Admin']],
    ])('refuses %s scopes naming the field', (_case, input) => {
      try {
        parseScopes(input);
        throw new Error('accepted');
      } catch (err) {
        expect(err).toBeInstanceOf(AppError);
        expect((err as AppError).code).toBe('validation_failed');
        expect((err as AppError).details).toEqual([{ field: 'scopes', problems: [expect.any(String)] }]);
      }
    });
  });
});

describe(ApiKeySecrets.name, () => {
  const sut = new ApiKeySecrets();

  it('makes distinct tp_ secrets of 256 random bits', () => {
    const a = sut.generate();
    const b = sut.generate();
    expect(a).toMatch(/^tp_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(Buffer.from(a.slice(3), 'base64url')).toHaveLength(32);
  });

  it('hashes with SHA-256 and compares hashes', () => {
    const secret = sut.generate();
    expect(sut.hash(secret)).toHaveLength(32);
    expect(sut.sameHash(sut.hash(secret), sut.hash(secret))).toBe(true);
    expect(sut.sameHash(sut.hash(secret), sut.hash(`${secret}x`))).toBe(false);
    expect(sut.sameHash(sut.hash(secret), Buffer.alloc(3))).toBe(false);
  });

  it.each([
    ['one of ours', `tp_${'a'.repeat(43)}`, true],
    ['another prefix', `sk_${'a'.repeat(43)}`, false],
    ['too long', `tp_${'a'.repeat(300)}`, false],
    ['empty', '', false],
  ])('tells whether a bearer value could be a secret: %s', (_case, value, expected) => {
    expect(sut.looksValid(value)).toBe(expected);
  });

  it('keeps only a short hint in clear', () => {
    expect(sut.hint(`tp_abcdefghijklmnop`)).toBe('tp_abcdefg');
  });
});
