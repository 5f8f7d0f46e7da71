import { parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * Phone-number keys shared by the dispatcher (pacing pairs, suppressions) and messaging (contact
 * matching). A person reaches us in several notations — Meta's `wa_id` (digits only), a stored
 * contact with `+` and punctuation, a Brazilian mobile with or without its ninth digit — and each
 * notation must land on ONE key, or a pair splits in two and each half gets its own send interval
 * (seed 004 "Pacing: per-pair FIFO", the single enqueue chokepoint).
 */

/** Brazil's country calling code. */
const BRAZIL = '55';

/**
 * E.164 digits of a phone number (no `+`), or null when it is not a possible number.
 * Digits without a `+` are read as international (as Meta's `wa_id` is), never as national.
 * Brazilian mobiles are given their ninth digit (see `withBrazilianNinthDigit`).
 * @example toPhoneKey('+55 92 98888-7777') === '5592988887777'; toPhoneKey('5592988887777') === '5592988887777'
 */
export function toPhoneKey(address: string): string | null {
  if (typeof address !== 'string') return null;
  const trimmed = address.trim();
  if (!/^[+\d][\d\s().\-/]*$/.test(trimmed)) return null;
  const digits = trimmed.replace(/\D/g, '');
  if (digits.length < 8 || digits.length > 15) return null;
  const parsed = parsePhoneNumberFromString(`+${digits}`);
  if (!parsed || !parsed.isPossible()) return null;
  return withBrazilianNinthDigit(parsed.number.slice(1));
}

/**
 * One `@`, no whitespace, a domain of dot-separated labels, none empty; lengths are
 * `isEmailAddress`'s. `ana@example.com.` reaches the same mailbox as `ana@example.com`: refused, so
 * no spelling of a suppressed address gets a key of its own.
 */
const EMAIL_ADDRESS_SHAPE = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

/** Longest local part (before the `@`) of an address, in UTF-8 octets (RFC 5321 §4.5.3.1.1). */
const EMAIL_LOCAL_PART_MAX_OCTETS = 64;

/**
 * Longest address, in UTF-8 octets: RFC 5321 §4.5.3.1.3 allows a path of 256 octets, and a path is
 * the address between `<` and `>` (RFC 3696 erratum 1690).
 */
const EMAIL_ADDRESS_MAX_OCTETS = 254;

/**
 * Whether `address` is a plain email address: one `@`, no whitespace, a domain of two or more
 * non-empty labels (`ana@example.com`; not `ana@example.com.` nor `ana@example..com`), a local part of at most 64 octets and at most 254 octets in all (RFC 5321).
 * Not a display form (`Ana <ana@example.com>`): the providers take the bare address. The one rule
 * of a contact's email (messaging) and of an email recipient (`toRecipientKey`), so what can be
 * stored can be sent to and suppressed. Callers trim first.
 */
export function isEmailAddress(address: string): boolean {
  if (typeof address !== 'string' || !EMAIL_ADDRESS_SHAPE.test(address)) return false;
  const localPart = address.slice(0, address.indexOf('@'));
  return Buffer.byteLength(localPart, 'utf8') <= EMAIL_LOCAL_PART_MAX_OCTETS && Buffer.byteLength(address, 'utf8') <= EMAIL_ADDRESS_MAX_OCTETS;
}

/**
 * The pacing key of a recipient address, per channel: E.164 digits for WhatsApp, the lower-cased
 * address for email (`isEmailAddress`), the trimmed id otherwise (a LinkedIn member id or profile
 * URL, which hold no whitespace). Null when the address is not valid for the channel. The enqueue
 * path, suppressions and reply holds all key recipients with it, so each refuses the same values.
 */
export function toRecipientKey(channel: string, address: string): string | null {
  if (channel === 'whatsapp') return toPhoneKey(address);
  if (typeof address !== 'string') return null;
  const trimmed = address.trim();
  if (trimmed === '' || /\s/.test(trimmed)) return null;
  if (channel === 'email') return isEmailAddress(trimmed) ? trimmed.toLowerCase() : null;
  return trimmed;
}

/**
 * Brazilian mobiles gained a ninth digit (a leading 9 after the two-digit area code) in 2012–2016,
 * but WhatsApp still reports many older accounts' `wa_id` without it. A 12-digit `55` number whose
 * subscriber part starts with 6–9 is such a mobile, and gets its 9 back; anything else is returned
 * unchanged (landlines start with 2–5 and never had a ninth digit).
 * @param digits E.164 digits without `+`
 */
export function withBrazilianNinthDigit(digits: string): string {
  if (digits.length === 12 && digits.startsWith(BRAZIL) && /[6-9]/.test(digits[4])) {
    return `${digits.slice(0, 4)}9${digits.slice(4)}`;
  }
  return digits;
}

/**
 * Both notations of a Brazilian mobile (with and without the ninth digit), the 13-digit form
 * first; any other number gives just itself. Useful to look a contact up by either form.
 * @param digits E.164 digits without `+`
 */
export function brazilianNinthDigitVariants(digits: string): string[] {
  const full = withBrazilianNinthDigit(digits);
  if (full.length === 13 && full.startsWith(BRAZIL) && full[4] === '9' && /[6-9]/.test(full[5])) {
    return [full, `${full.slice(0, 4)}${full.slice(5)}`];
  }
  return [full];
}

/** Whether two addresses are the same phone number (notation and Brazil's ninth digit aside). */
export function isSamePhoneNumber(a: string, b: string): boolean {
  const ka = toPhoneKey(a);
  return ka !== null && ka === toPhoneKey(b);
}
