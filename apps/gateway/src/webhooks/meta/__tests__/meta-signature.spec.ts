import { isMetaVerifyToken } from '../meta-signature.js';

describe(isMetaVerifyToken.name, () => {
  const TOKEN = 'our-verify-token';

  it.each([
    ['the token itself', TOKEN, true],
    ['a different token of the same length', 'our-verify-tokeN', false],
    ['a prefix', 'our-verify', false],
    ['a longer token that starts with it', `${TOKEN}x`, false],
    ['an empty string', '', false],
    ['the token twice (an array from a repeated query parameter)', [TOKEN, TOKEN], false],
    ['nothing', undefined, false],
  ])('compares %s in constant time: %p → %p', (_case, given, expected) => {
    expect(isMetaVerifyToken(given, TOKEN)).toBe(expected);
  });
});
