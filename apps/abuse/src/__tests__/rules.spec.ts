import { detectPatterns, isGibberish, type RecentMessage, textHash } from '../patterns/pattern-detection.js';
import { penaltyFor } from '../penalties/penalty-ladder.js';
import { countMessage, type RateCounters } from '../rate-limits/windows.js';

const limits = { per_minute: 5, per_hour: 60, per_day: 200, per_instance: 500 };
const fresh = (): RateCounters => ({
  minute_count: 0,
  minute_reset_at: null,
  hourly_count: 0,
  hourly_reset_at: null,
  daily_count: 0,
  daily_reset_at: null,
  is_throttled: false,
  throttled_until: null,
  throttle_limit: null,
});

describe('penaltyFor', () => {
  it.each([
    [1, 'warning', 0],
    [2, 'throttle', 15 * 60_000],
    [3, 'throttle', 3600_000],
    [4, 'throttle', 24 * 3600_000],
    [5, 'block', 7 * 24 * 3600_000],
    [9, 'block', 7 * 24 * 3600_000],
  ])('offense %i → %s for %i ms', (n, type, durationMs) => {
    expect(penaltyFor(n)).toEqual({ type, durationMs });
  });
});

describe('countMessage', () => {
  it('admits five in a minute and throttles the sixth until the next whole minute', () => {
    let c = fresh();
    const now = new Date('2026-03-01T10:00:30Z');
    for (let i = 0; i < 5; i++) {
      const out = countMessage(c, limits, now);
      expect(out.allowed).toBe(true);
      c = out.counters;
    }
    const sixth = countMessage(c, limits, now);
    expect(sixth).toMatchObject({ allowed: false, limit: 'minute', resetAt: new Date('2026-03-01T10:01:00Z') });
    // still throttled a second before the reset, free at the reset
    expect(countMessage(sixth.counters, limits, new Date('2026-03-01T10:00:59Z')).allowed).toBe(false);
    expect(countMessage(sixth.counters, limits, new Date('2026-03-01T10:01:00Z')).allowed).toBe(true);
  });

  it('resets the hour on the clock hour and the day at UTC midnight', () => {
    const c = { ...fresh(), hourly_count: 60, hourly_reset_at: new Date('2026-03-01T11:00:00Z'), daily_count: 10, daily_reset_at: new Date('2026-03-02T00:00:00Z') };
    const denied = countMessage(c, limits, new Date('2026-03-01T10:59:00Z'));
    expect(denied).toMatchObject({ allowed: false, limit: 'hour', resetAt: new Date('2026-03-01T11:00:00Z') });
    const admitted = countMessage(c, limits, new Date('2026-03-01T11:00:00Z'));
    expect(admitted.allowed).toBe(true);
    expect(admitted.counters.hourly_count).toBe(1);
    expect(admitted.counters.daily_count).toBe(11);
  });

  it('uses the premium limits when given them', () => {
    let c = fresh();
    const now = new Date('2026-03-01T10:00:00Z');
    for (let i = 0; i < 10; i++) c = (countMessage(c, { ...limits, per_minute: 10 }, now) as { counters: RateCounters }).counters;
    expect(countMessage(c, { ...limits, per_minute: 10 }, now).allowed).toBe(false);
  });
});

describe('isGibberish', () => {
  it.each([['asdfgh'], ['qwerty qwerty'], ['sdkjfhskdjfh'], ['xzcvbn mnbv'], ['aaaaaaaa'], ['bcdfg hjklm']])('%j is gibberish', (t) => {
    expect(isGibberish(t)).toBe(true);
  });
  it.each([['Does it come in another color?'], ['kkkkkkk'], ['hahahaha'], ['ok'], ['obrigado!'], [''], [null], ['Quero saber o preço do produto azul']])('%j is not gibberish', (t) => {
    expect(isGibberish(t)).toBe(false);
  });
});

describe('detectPatterns', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, s)).toISOString();
  const msg = (i: number, text: string, second: number): RecentMessage => ({ ref: `m${i}`, at: at(second), hash: textHash(text), gibberish: isGibberish(text) });

  it('finds spam in identical repeats (case and punctuation ignored)', () => {
    const w = [msg(1, 'Buy now!', 0), msg(2, 'buy now', 10), msg(3, 'BUY NOW!!', 20), msg(4, 'hello', 30), msg(5, 'ok', 40)];
    expect(detectPatterns(w).map((p) => p.type)).toEqual(['spam']);
  });

  it('finds flooding when messages come less than 2 s apart', () => {
    const w = [msg(1, 'a one', 0), msg(2, 'b two', 1), msg(3, 'c three', 2), msg(4, 'd four', 3), msg(5, 'e five', 30)];
    expect(detectPatterns(w).map((p) => p.type)).toEqual(['flooding']);
  });

  it('does not call 2-second gaps flooding', () => {
    const w = [1, 2, 3, 4, 5].map((i) => msg(i, `message number ${i}`, i * 2));
    expect(detectPatterns(w)).toEqual([]);
  });

  it('finds gibberish', () => {
    const w = [msg(1, 'asdfgh', 0), msg(2, 'qwerty', 10), msg(3, 'zxcvbn', 20), msg(4, 'hello there', 30), msg(5, 'ok', 40)];
    expect(detectPatterns(w).map((p) => p.type)).toEqual(['gibberish']);
  });

  it('finds nothing in an ordinary conversation', () => {
    const w = [msg(1, 'Hi', 0), msg(2, 'Do you have it in blue?', 30), msg(3, 'And in size M?', 60), msg(4, 'Thanks', 90), msg(5, 'Bye', 120)];
    expect(detectPatterns(w)).toEqual([]);
  });
});
