import { createHmac, timingSafeEqual } from 'node:crypto';
import he from 'he';

/**
 * Whether `header` is Nylas's signature of `rawBody`: hex HMAC-SHA256 of the exact raw bytes with
 * the destination's webhook secret (fixtures/README.md, "Signature and authentication rules").
 * Constant-time compare; a missing or malformed header is a mismatch.
 */
export function isValidNylasSignature(rawBody: Buffer | undefined, header: string | string[] | undefined, secret: string): boolean {
  if (!rawBody || typeof header !== 'string' || !/^[0-9a-f]{64}$/i.test(header.trim())) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const given = Buffer.from(header.trim(), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Plain text of a Nylas message body (HTML): line breaks for `<br>` and block ends, tags dropped,
 * character references decoded (the `he` library; a no-break space reads as a space). Enough for
 * the opt-out rule and the thread view; not a renderer.
 */
export function htmlToText(html: string | null | undefined): string {
  if (!html) return '';
  const withoutTags = html
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, '')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|li|tr|h[1-6]|blockquote)>/gi, '\n')
    .replace(/<[^>]+>/g, '');
  return he
    .decode(withoutTags)
    .replace(/\u00a0/g, ' ')
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
