import { capSection, CUT_MARK, fieldLines, threadLine } from '../context-render.js';

describe('capSection', () => {
  it('keeps a section that fits, whole', () => {
    expect(capSection(['newest reply', 'older'], 100)).toBe('newest reply\nolder');
  });

  it.each([20, 40, 64])('cuts at the cap (%d) and ends with "(cut to fit)", removing only the tail', (cap) => {
    const items = ['[email] 2026-10-27 inbound: can you send pricing?', 'x'.repeat(200)];
    const text = capSection(items, cap);
    expect(text.length).toBeLessThanOrEqual(cap);
    expect(text.endsWith(CUT_MARK)).toBe(true);
    expect(items.join('\n').startsWith(text.slice(0, text.length - CUT_MARK.length - 1))).toBe(true);
  });

  it('counts the cap in code points and never cuts an emoji or a flag in half', () => {
    expect(capSection(['\u{1F600}'.repeat(40)], 40)).toBe('\u{1F600}'.repeat(40));
    // Room before the mark: 40 - 12 - 1 = 27 code points, the 27th being the emoji, then a flag.
    const cut = capSection([`${'x'.repeat(26)}\u{1F600}\u{1F1E7}\u{1F1F7} tail`, 'y'.repeat(100)], 40);
    expect(cut).toBe(`${'x'.repeat(26)}\u{1F600}\n${CUT_MARK}`);
    expect(capSection([`${'x'.repeat(27)}\u{1F1E7}\u{1F1F7} tail`, 'y'.repeat(100)], 41)).toBe(`${'x'.repeat(27)}\n${CUT_MARK}`);
  });

  it('drops empty items', () => {
    expect(capSection(['a', '', 'b'], 10)).toBe('a\nb');
  });
});

describe('threadLine', () => {
  it.each([
    ['Sounds good.\n\nOn Mon, Oct 27, 2026 at 10:00 Sales <s@x.com> wrote:\n> Hi Sarah\n> old text', 'Sounds good.'],
    ['Yes\n> quoted line\nplease call', 'Yes please call'],
    ['Line one\nline two', 'Line one line two'],
  ])('strips quoted earlier text from %j', (text, expected) => {
    expect(threadLine('email', '2026-10-27T10:00:00.000Z', 'inbound', text)).toBe(`[email] 2026-10-27 inbound: ${expected}`);
  });

  it('shows the subject of an outbound email', () => {
    expect(threadLine('email', '2026-10-27T10:00:00.000Z', 'outbound', 'Hi', 'Chairs')).toBe('[email] 2026-10-27 outbound: (Chairs) Hi');
  });
});

describe('fieldLines', () => {
  it('writes name: value lines and skips empty values', () => {
    expect(fieldLines({ name: 'Sarah', email: null, tags: ['vip', 'q3'], empty: '', none: [] })).toEqual(['name: Sarah', 'tags: vip, q3']);
  });
});
