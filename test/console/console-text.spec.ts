import { mergeTimeline } from '../../apps/console/src/enrollments/timeline-merge.js';
import { cutText, formatAge, graphemeLength } from '../../apps/console/src/text.js';

describe('console text', () => {
  describe('cutText', () => {
    it.each([
      ['short text', 'Olá, tudo bem?', 500, 'Olá, tudo bem?'],
      ['exactly the limit', 'abc', 3, 'abc'],
      ['one over', 'abcd', 3, 'abc…'],
      // A family emoji is 7 code points and 11 UTF-16 units, one grapheme.
      ['an emoji is never split', '👨‍👩‍👧‍👦👨‍👩‍👧‍👦x', 1, '👨‍👩‍👧‍👦…'],
      ['a combining accent stays on its letter', 'e\u0301e\u0301e\u0301', 2, 'e\u0301e\u0301…'],
    ])('%s', (_name, text, max, expected) => {
      expect(cutText(text, max)).toBe(expected);
    });

    it('cuts a long reply at 500 graphemes, not 500 UTF-16 units', () => {
      const text = '😀'.repeat(600);
      const cut = cutText(text, 500);
      expect(graphemeLength(cut)).toBe(501);
      expect(cut.startsWith('😀'.repeat(500))).toBe(true);
    });
  });

  it.each([
    [5, '5 s'],
    [125, '2 min'],
    [7200, '2 h'],
    [200_000, '2 d'],
  ])('formatAge(%s) is %s', (seconds, expected) => {
    expect(formatAge(seconds)).toBe(expected);
  });
});

describe('mergeTimeline', () => {
  const message = (id: string, at: string | null) => ({ id, sent_at: at, created_at: at ?? '2026-01-01T00:00:00.000Z', channel: 'email', direction: 'inbound', body: id }) as never;

  it('drops a message the timeline already shows (a thread email by id, a sent action by message id) and sorts newest first, no time last', () => {
    const timeline = [
      { id: 'e1', kind: 'email' as const, at: '2026-03-02T10:00:00.000Z', data: {} },
      { id: 'a1', kind: 'action' as const, at: '2026-03-01T10:00:00.000Z', data: { message_id: 'm-sent' } },
      { id: 'x', kind: 'next_check_moved' as const, at: null, data: {} },
    ];
    const merged = mergeTimeline(timeline, [message('e1', '2026-03-02T10:00:00.000Z'), message('m-sent', '2026-03-01T10:00:01.000Z'), message('whatsapp-1', '2026-03-03T09:00:00.000Z'), message('old', '2026-02-01T00:00:00.000Z')]);
    expect(merged.map((i) => `${i.source}:${i.id}`)).toEqual(['crm:whatsapp-1', 'outreach:e1', 'outreach:a1', 'crm:old', 'outreach:x']);
  });

  it('breaks a tie on time by id, descending', () => {
    const at = '2026-03-02T10:00:00.000Z';
    const merged = mergeTimeline([{ id: 'b', kind: 'decision' as const, at, data: {} }], [message('a', at), message('c', at)]);
    expect(merged.map((i) => i.id)).toEqual(['c', 'b', 'a']);
  });
});
