import type { TimelineItem } from '@touchpoint/contracts';
import { newestFirst } from '../timeline.service.js';

const item = (id: string, at: string | null): TimelineItem => ({ id, kind: 'decision', at, data: {} });

describe('newestFirst', () => {
  it('sorts by time, newest first, ties on id, items with no time last', () => {
    const items = [item('a', '2026-10-27T10:00:00.000Z'), item('n1', null), item('c', '2026-10-28T10:00:00.000Z'), item('b', '2026-10-27T10:00:00.000Z'), item('n2', null)];
    expect(items.sort(newestFirst).map((i) => i.id)).toEqual(['c', 'b', 'a', 'n2', 'n1']);
  });
});
