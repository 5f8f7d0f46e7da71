import { brazilianNinthDigitVariants, isEmailAddress, isSamePhoneNumber, toPhoneKey, toRecipientKey, withBrazilianNinthDigit } from '../index.js';

describe('phone keys', () => {
  describe('toPhoneKey', () => {
    it.each([
      ['+55 92 98888-7777', '5592988887777'],
      ['5592988887777', '5592988887777'],
      ['+5592988887777', '5592988887777'],
      ['559288887777', '5592988887777'], // wa_id of an older account, no ninth digit
      ['+55 (11) 98765-4321', '5511987654321'],
      ['+55 11 3456-7890', '551134567890'], // landline keeps 12 digits
      ['+1 415 555 2671', '14155552671'],
      ['14155552671', '14155552671'],
      ['+44 20 7946 0958', '442079460958'],
    ])('maps %s to %s', (input, key) => {
      expect(toPhoneKey(input)).toBe(key);
    });

    it.each(['', 'abc', '+', '12', 'ana@example.com', '+55 92 98888-7777 ext'])('rejects %p', (input) => {
      expect(toPhoneKey(input)).toBeNull();
    });
  });

  it('gives the ninth digit only to Brazilian mobiles', () => {
    expect(withBrazilianNinthDigit('559288887777')).toBe('5592988887777');
    expect(withBrazilianNinthDigit('551134567890')).toBe('551134567890');
    expect(withBrazilianNinthDigit('442079460958')).toBe('442079460958');
  });

  it('lists both notations of a Brazilian mobile', () => {
    expect(brazilianNinthDigitVariants('559288887777')).toEqual(['5592988887777', '559288887777']);
    expect(brazilianNinthDigitVariants('5592988887777')).toEqual(['5592988887777', '559288887777']);
    expect(brazilianNinthDigitVariants('14155552671')).toEqual(['14155552671']);
  });

  it('treats the notations of one number as the same', () => {
    expect(isSamePhoneNumber('+55 92 98888-7777', '559288887777')).toBe(true);
    expect(isSamePhoneNumber('+55 92 98888-7777', '5592988887778')).toBe(false);
  });

  it('keys email by lower-cased address', () => {
    expect(toRecipientKey('email', ' Ana@Example.com ')).toBe('ana@example.com');
    expect(toRecipientKey('whatsapp', '+55 92 98888-7777')).toBe('5592988887777');
  });

  it.each([['not an address'], ['ana@example'], ['@example.com'], ['ana@@example.com'], ['ana @example.com'], ['Ana <ana@example.com>'], ['']])('refuses %j as an email address', (value) => {
    expect(toRecipientKey('email', value)).toBeNull();
  });

  it('keys a LinkedIn member id or profile URL as given, trimmed, and refuses one with whitespace inside', () => {
    expect(toRecipientKey('linkedin', ' ACoAAAbc123 ')).toBe('ACoAAAbc123');
    expect(toRecipientKey('linkedin', 'https://www.linkedin.com/in/ana-souza/')).toBe('https://www.linkedin.com/in/ana-souza/');
    expect(toRecipientKey('linkedin', 'not a member id')).toBeNull();
  });
});

/** RFC 5321 §4.5.3.1.1 and §4.5.3.1.3: a local part of at most 64 octets, an address of at most 254. */
describe('email addresses', () => {
  describe(isEmailAddress.name, () => {
    it.each([
      ['a plain address', 'ana@example.com', true],
      ['a local part of 64 octets', `${'a'.repeat(64)}@x.co`, true],
      ['a local part of 65 octets', `${'a'.repeat(65)}@x.co`, false],
      ['a local part of 300 octets', `${'a'.repeat(300)}@x.co`, false],
      ['an address of 254 octets', `${'a'.repeat(64)}@${'b'.repeat(186)}.co`, true],
      ['an address of 255 octets', `${'a'.repeat(64)}@${'b'.repeat(187)}.co`, false],
      ['a local part of 32 two-octet letters (64 octets)', `${'é'.repeat(32)}@x.co`, true],
      ['a local part of 33 two-octet letters (66 octets, 33 characters)', `${'é'.repeat(33)}@x.co`, false],
      ['a domain of 240 two-octet letters (486 octets, 246 characters)', `a@${'é'.repeat(240)}.xyz`, false],
      ['no dot in the domain', 'ana@example', false],
      // The same mailbox as ana@example.com to a mail system: refused, so it cannot escape that address's suppression.
      ['a trailing dot in the domain', 'ana@example.com.', false],
      ['an empty label in the domain', 'ana@example..com', false],
      ['a leading dot in the domain', 'ana@.example.com', false],
      ['two @', 'ana@@example.com', false],
      ['a display form', 'Ana <ana@example.com>', false],
    ])('%s', (_case, address, expected) => {
      expect(isEmailAddress(address)).toBe(expected);
    });
  });

  it('gives no recipient key to an address over the lengths', () => {
    expect(toRecipientKey('email', `${'a'.repeat(65)}@x.co`)).toBeNull();
    expect(toRecipientKey('email', ` ${'A'.repeat(64)}@x.co `)).toBe(`${'a'.repeat(64)}@x.co`);
  });
});
