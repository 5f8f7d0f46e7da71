import { signUnsubscribeToken, verifyUnsubscribeToken } from '../index.js';

describe('unsubscribe token', () => {
  const secret = 'test-unsubscribe-secret';
  const token = signUnsubscribeToken({ organization_id: 'org-1', email: ' Ana@Example.com ' }, secret);

  it('round-trips the organization and the lower-cased address', () => {
    expect(verifyUnsubscribeToken(token, secret)).toEqual({ organization_id: 'org-1', email: 'ana@example.com' });
  });

  const [body, sig] = token.split('.') as [string, string];
  const otherBody = Buffer.from(JSON.stringify({ o: 'org-2', e: 'ana@example.com' })).toString('base64url');
  it.each([
    ['another organization in the body', `${otherBody}.${sig}`],
    ['a flipped signature character', `${body}.${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`],
    ['no signature', `${body}.`],
    ['three parts', `${token}.x`],
    ['garbage', 'not-a-token'],
    ['empty', ''],
  ])('refuses %s', (_label, tampered) => {
    expect(verifyUnsubscribeToken(tampered, secret)).toBeNull();
  });

  it('refuses a token signed with another secret, and a non-string', () => {
    expect(verifyUnsubscribeToken(token, 'other-secret')).toBeNull();
    expect(verifyUnsubscribeToken(undefined, secret)).toBeNull();
  });
});
