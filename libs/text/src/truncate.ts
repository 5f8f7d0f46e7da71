/**
 * Length and cutting of text that a person or a model wrote. The unit of every text limit is the
 * Unicode code point: it is what PostgreSQL counts for `varchar(n)` and `length()`, and what the
 * providers' "characters" mean. A cut never falls inside a grapheme cluster (a flag, a ZWJ family
 * emoji, a letter and its combining accent, a keycap), so it never leaves half an emoji or a lone
 * surrogate behind; a lone surrogate makes the text unstorable as JSON in PostgreSQL.
 */

const HIGH_SURROGATE_MIN = 0xd800;
const HIGH_SURROGATE_MAX = 0xdbff;
const LOW_SURROGATE_MIN = 0xdc00;
const LOW_SURROGATE_MAX = 0xdfff;

/** The Unicode replacement character, written in place of a lone surrogate. */
const REPLACEMENT_CHARACTER = '\uFFFD';

const ANY_SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** `LONE_SURROGATE` without the global flag, whose `test` keeps no position between calls. */
const FIRST_LONE_SURROGATE = new RegExp(LONE_SURROGATE.source);

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The number of Unicode code points of `text` (a surrogate pair counts 1, a lone surrogate 1).
 * Use it for every "at most N characters" check, so a check agrees with PostgreSQL and with
 * `truncateText`. `"a😀"` → 2 (its `.length` is 3).
 */
export function codePointLength(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= HIGH_SURROGATE_MIN && unit <= HIGH_SURROGATE_MAX && i + 1 < text.length && isLowSurrogate(text.charCodeAt(i + 1))) i++;
    count++;
  }
  return count;
}

/**
 * Whether `text` holds a lone surrogate: half of a UTF-16 pair (U+D800 to U+DFFF) without its
 * other half, as the JSON escape `\ud800` alone spells it. Such text is not Unicode: it cannot be
 * encoded as UTF-8 without replacing that half by U+FFFD (`toWellFormedText`). `"a\ud800b"` → true,
 * `"a😀"` → false. (String.prototype.isWellFormed answers the opposite, from ES2024 on.)
 */
export function hasLoneSurrogate(text: string): boolean {
  return ANY_SURROGATE.test(text) && FIRST_LONE_SURROGATE.test(text);
}

/**
 * `text` with every lone surrogate (half of a pair, as a careless cut or a `\ud83d` JSON escape
 * leaves it) replaced by U+FFFD, so it can be encoded as UTF-8 and stored as JSON. Well-formed
 * text comes back unchanged (the same string); the code point count never changes.
 */
export function toWellFormedText(text: string): string {
  return ANY_SURROGATE.test(text) ? text.replace(LONE_SURROGATE, REPLACEMENT_CHARACTER) : text;
}

/** Options of `truncateText`. */
export interface TruncateTextOptions {
  /** Appended when the text was cut (e.g. `'…'`); it counts toward the limit. Default: none. */
  ellipsis?: string;
}

/**
 * `text` cut to at most `maxCodePoints` Unicode code points, at the last grapheme cluster
 * boundary that fits, so a flag, a ZWJ emoji sequence or a letter + combining mark is kept whole
 * or dropped whole (a cluster that alone exceeds the room left is dropped). When a cut happens,
 * `options.ellipsis` is appended within the limit (if the ellipsis alone does not fit, it is cut
 * itself). A text that fits comes back whole. The result is always well-formed (see
 * `toWellFormedText`).
 *
 * @param maxCodePoints the limit in code points; a non-negative number (a fraction is rounded down)
 * @throws RangeError when `maxCodePoints` is negative or not a number
 */
export function truncateText(text: string, maxCodePoints: number, options: TruncateTextOptions = {}): string {
  if (!(maxCodePoints >= 0)) throw new RangeError(`maxCodePoints must be a non-negative number, got ${maxCodePoints}`);
  const limit = Math.floor(maxCodePoints);
  // A UTF-16 length within the limit means at most that many code points: no counting needed.
  if (text.length <= limit || codePointLength(text) <= limit) return toWellFormedText(text);
  const ellipsis = options.ellipsis ?? '';
  const room = limit - codePointLength(ellipsis);
  if (room < 0) return truncateText(ellipsis, limit);
  let end = indexAfterCodePoints(text, room);
  // `end` < text.length here, since the text has more than `limit` code points.
  const cluster = graphemes.segment(text).containing(end);
  if (cluster && cluster.index < end) end = cluster.index;
  return toWellFormedText(text.slice(0, end)) + toWellFormedText(ellipsis);
}

/** The UTF-16 index just after the first `count` code points of `text`. */
function indexAfterCodePoints(text: string, count: number): number {
  let index = 0;
  for (let seen = 0; seen < count && index < text.length; seen++) {
    const unit = text.charCodeAt(index);
    const pairs = unit >= HIGH_SURROGATE_MIN && unit <= HIGH_SURROGATE_MAX && index + 1 < text.length && isLowSurrogate(text.charCodeAt(index + 1));
    index += pairs ? 2 : 1;
  }
  return index;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= LOW_SURROGATE_MIN && unit <= LOW_SURROGATE_MAX;
}

/**
 * A parsed JSON value with every string (values and keys, at any depth) made well-formed by
 * `toWellFormedText`. JSON may spell a lone surrogate as `\ud83d`; JavaScript accepts it but
 * PostgreSQL refuses it in `jsonb`, so a body from outside is repaired once where it enters.
 * Values that need no repair come back as the same reference; others are copied, never mutated.
 */
export function toWellFormedJson<T>(value: T): T {
  return mapJsonStrings(value, toWellFormedText);
}

/**
 * `text` as PostgreSQL can store it in `text` and `jsonb`: well-formed (`toWellFormedText`), and
 * each NUL (U+0000, which JSON may spell `\u0000` and PostgreSQL refuses in both) replaced by
 * U+FFFD too. Text that needs neither comes back unchanged; the code point count never changes.
 */
export function toStorableText(text: string): string {
  const wellFormed = toWellFormedText(text);
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', REPLACEMENT_CHARACTER) : wellFormed;
}

/**
 * `toWellFormedJson` with `toStorableText` for every string: for a body from outside that must be
 * stored rather than refused (a provider's signed webhook, which the provider would otherwise
 * deliver again and again). Same references where nothing changes.
 */
export function toStorableJson<T>(value: T): T {
  return mapJsonStrings(value, toStorableText);
}

/** `value` with `fix` applied to every string, keys included; unchanged parts keep their references. */
function mapJsonStrings<T>(value: T, fix: (text: string) => string): T {
  if (typeof value === 'string') return fix(value) as T;
  if (Array.isArray(value)) {
    const items = value.map((item) => mapJsonStrings(item, fix));
    return (items.some((item, i) => item !== value[i]) ? items : value) as T;
  }
  if (value !== null && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    const entries = Object.entries(value);
    const repaired = entries.map(([key, item]) => [fix(key), mapJsonStrings(item, fix)] as const);
    return (repaired.some(([key, item], i) => key !== entries[i]![0] || item !== entries[i]![1]) ? Object.fromEntries(repaired) : value) as T;
  }
  return value;
}
