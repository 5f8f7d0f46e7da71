import { codePointLength, hasLoneSurrogate, toStorableJson, toStorableText, toWellFormedJson, toWellFormedText, truncateText } from '../index.js';

const FLAG_BR = '\u{1F1E7}\u{1F1F7}'; // 🇧🇷: two regional indicators
const FLAG_PT = '\u{1F1F5}\u{1F1F9}';
const FAMILY = '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}'; // 👨‍👩‍👧: 5 code points joined by ZWJ
const THUMB_MEDIUM = '\u{1F44D}\u{1F3FD}'; // 👍🏽: emoji + skin tone modifier
const KEYCAP_ONE = '1\uFE0F\u20E3'; // 1️⃣
const E_ACUTE_COMBINING = 'e\u0301'; // é as a letter + combining accent
const GRINNING = '\u{1F600}'; // 😀, a surrogate pair
const CLEF = '\u{1D11E}'; // 𝄞, an astral symbol
const CJK_EXT_B = '\u{2070E}\u{20731}\u{20779}'; // astral CJK ideographs

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const clusterEnds = (text: string) => new Set([0, ...[...segmenter.segment(text)].map((s) => s.index + s.segment.length)]);

describe('truncateText', () => {
  it.each<[string, string, number, string]>([
    ['empty text', '', 5, ''],
    ['empty text, limit 0', '', 0, ''],
    ['shorter than the limit', 'abc', 5, 'abc'],
    ['exactly the limit', 'abc', 3, 'abc'],
    ['one over the limit', 'abcd', 3, 'abc'],
    ['limit 0', 'abc', 0, ''],
    ['limit 1', 'abc', 1, 'a'],
    ['limit 1 on an emoji', GRINNING + 'x', 1, GRINNING],
    ['limit 0 on an emoji', GRINNING, 0, ''],
    ['an emoji that fits in code points though not in UTF-16 units', `ab${GRINNING}`, 3, `ab${GRINNING}`],
    ['an emoji right at the boundary', `ab${GRINNING}c`, 3, `ab${GRINNING}`],
    ['an emoji just past the boundary', `abc${GRINNING}`, 3, 'abc'],
    ['only emoji', GRINNING.repeat(3), 2, GRINNING.repeat(2)],
    ['4,095 ASCII characters and an emoji, limit 4,096', 'a'.repeat(4095) + GRINNING, 4096, 'a'.repeat(4095) + GRINNING],
    ['4,096 ASCII characters and an emoji, limit 4,096', 'a'.repeat(4096) + GRINNING, 4096, 'a'.repeat(4096)],
    ['astral symbols', CLEF + CLEF, 1, CLEF],
    ['CJK', '漢字かなカナ', 2, '漢字'],
    ['astral CJK', CJK_EXT_B, 2, CJK_EXT_B.slice(0, 4)],
    ['a flag kept whole', FLAG_BR + FLAG_PT, 2, FLAG_BR],
    ['a flag never split into regional indicators', FLAG_BR + FLAG_PT, 3, FLAG_BR],
    ['a flag that does not fit is dropped whole', FLAG_BR, 1, ''],
    ['a ZWJ family that does not fit is dropped whole', `a${FAMILY}`, 4, 'a'],
    ['a ZWJ family that fits', `a${FAMILY}b`, 6, `a${FAMILY}`],
    ['a skin tone modifier stays with its emoji', `ok${THUMB_MEDIUM}`, 3, 'ok'],
    ['a keycap stays whole', `x${KEYCAP_ONE}`, 3, 'x'],
    ['a combining accent stays with its letter', `caf${E_ACUTE_COMBINING}!`, 4, 'caf'],
    ['a letter and its combining accent that fit', `caf${E_ACUTE_COMBINING}!`, 5, `caf${E_ACUTE_COMBINING}`],
    ['precomposed accents count one each', 'ação', 3, 'açã'],
    ['a lone high surrogate in the input is repaired', 'ab\uD83D', 10, 'ab\uFFFD'],
    ['a lone low surrogate in the input is repaired', '\uDE00ab', 2, '\uFFFDa'],
  ])('%s', (_, text, limit, expected) => {
    expect(truncateText(text, limit)).toBe(expected);
  });

  it.each<[string, string, number, string, string]>([
    ['cut, with room for the ellipsis', 'Hello world', 8, '…', 'Hello w…'],
    ['not cut: no ellipsis', 'Hello', 8, '…', 'Hello'],
    ['exactly the limit: no ellipsis', 'Hello', 5, '…', 'Hello'],
    ['an emoji before the ellipsis', `ab${GRINNING}cd`, 4, '…', `ab${GRINNING}…`],
    ['a flag before the ellipsis', FLAG_BR + FLAG_BR, 3, '…', `${FLAG_BR}…`],
    ['a flag that leaves no room for itself', FLAG_BR + FLAG_BR, 2, '…', '…'],
    ['a longer ellipsis counts in full', 'abcdefgh', 6, ' (cut)', ' (cut)'],
    ['an ellipsis longer than the limit is cut itself', 'abcdef', 2, '...', '..'],
    ['limit 0 with an ellipsis', 'abc', 0, '…', ''],
    ['limit 1 with an ellipsis', 'abc', 1, '…', '…'],
  ])('%s', (_, text, limit, ellipsis, expected) => {
    expect(truncateText(text, limit, { ellipsis })).toBe(expected);
  });

  it('never leaves a lone surrogate nor a broken cluster, at any limit, and keeps to the limit', () => {
    const text = `Oi ${GRINNING}${FLAG_BR}${FLAG_PT} ${FAMILY}a${E_ACUTE_COMBINING}${THUMB_MEDIUM}漢${CLEF}${KEYCAP_ONE}${CJK_EXT_B}!`;
    const ends = clusterEnds(text);
    for (let limit = 0; limit <= codePointLength(text) + 1; limit++) {
      for (const ellipsis of [undefined, '…']) {
        const cut = truncateText(text, limit, { ellipsis });
        expect(codePointLength(cut)).toBeLessThanOrEqual(limit);
        expect(hasLoneSurrogate(cut)).toBe(false);
        expect(JSON.stringify(cut)).not.toMatch(/\\ud[89a-f]/i);
        const kept = ellipsis && cut !== text ? cut.slice(0, cut.length - ellipsis.length) : cut;
        expect(text.startsWith(kept)).toBe(true);
        expect(ends.has(kept.length)).toBe(true);
      }
    }
  });

  it.each([[-1], [Number.NaN]])('refuses the limit %p', (limit) => {
    expect(() => truncateText('abc', limit)).toThrow(RangeError);
  });
});

describe('codePointLength', () => {
  it.each<[string, number]>([
    ['', 0],
    ['abc', 3],
    ['ação', 4],
    [GRINNING, 1],
    [`a${GRINNING}`, 2],
    [FLAG_BR, 2],
    [FAMILY, 5],
    [E_ACUTE_COMBINING, 2],
    [CJK_EXT_B, 3],
    ['\uD83D', 1],
    ['\uDE00\uD83D', 2],
  ])('%j has %i code points', (text, expected) => {
    expect(codePointLength(text)).toBe(expected);
  });
});

describe('toWellFormedText', () => {
  it.each<[string, string]>([
    ['', ''],
    ['plain', 'plain'],
    [`${GRINNING}${FAMILY}`, `${GRINNING}${FAMILY}`],
    ['a\uD83D', 'a\uFFFD'],
    ['\uDE00a', '\uFFFDa'],
    ['\uD83D\uD83D\uDE00', `\uFFFD${GRINNING}`],
    ['\uDE00\uD83D', '\uFFFD\uFFFD'],
  ])('%j → %j', (text, expected) => {
    expect(toWellFormedText(text)).toBe(expected);
  });
});

describe('hasLoneSurrogate', () => {
  it.each<[string, boolean]>([
    ['', false],
    ['plain', false],
    [`${GRINNING}${FAMILY}${CLEF}`, false],
    ['a\uD800b', true],
    ['a\uD83D', true],
    ['\uDE00a', true],
    ['\uD83D\uD83D\uDE00', true],
    ['\uDE00\uD83D', true],
    ['\uFFFD', false],
  ])('%j → %j', (text, expected) => {
    expect(hasLoneSurrogate(text)).toBe(expected);
    // Asked again, the same answer: the pattern keeps no position.
    expect(hasLoneSurrogate(text)).toBe(expected);
  });
});

describe('toStorableText and toStorableJson', () => {
  it('replace each NUL and each lone surrogate by U+FFFD, keeping the code point count and whole pairs', () => {
    expect(toStorableText(`a\u0000b\u0000\uD83D ${GRINNING}`)).toBe(`a\uFFFDb\uFFFD\uFFFD ${GRINNING}`);
    const text = 'plain text';
    expect(toStorableText(text)).toBe(text);
  });

  it('repair strings and keys at any depth, as JSON.parse gives them, and give back the same value when nothing needs it', () => {
    const parsed = JSON.parse('{"statuses":[{"errors":[{"title":"x\\u0000"}],"n":1}],"k\\u0000":"\\ud83d"}');
    expect(toStorableJson(parsed)).toEqual({ statuses: [{ errors: [{ title: 'x\uFFFD' }], n: 1 }], 'k\uFFFD': '\uFFFD' });
    const body = { entry: [{ text: { body: `oi ${GRINNING}` } }], n: 2 };
    expect(toStorableJson(body)).toBe(body);
  });
});

describe('toWellFormedJson', () => {
  it('repairs lone surrogates in strings and keys at any depth, as JSON.parse gives them', () => {
    const parsed = JSON.parse('{"entry":[{"text":{"body":"oi \\ud83d"},"n":1,"ok":true,"none":null}],"k\\ude00":"v"}');
    expect(toWellFormedJson(parsed)).toEqual({ entry: [{ text: { body: 'oi \uFFFD' }, n: 1, ok: true, none: null }], 'k\uFFFD': 'v' });
    expect(parsed.entry[0].text.body).toBe('oi \uD83D');
  });

  it('gives back the same value when nothing needs repair', () => {
    const body = { entry: [{ text: { body: `oi ${GRINNING}` } }], n: 2 };
    expect(toWellFormedJson(body)).toBe(body);
    expect(toWellFormedJson(null)).toBeNull();
    expect(toWellFormedJson(3)).toBe(3);
  });
});
