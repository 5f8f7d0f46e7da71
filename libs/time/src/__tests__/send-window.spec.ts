import { isInsideSendWindow, nextSendOpening, type SendWindow, sendWindowProblems } from '../send-window.js';

const EVERY_DAY = [1, 2, 3, 4, 5, 6, 7];
const WEEKDAYS = [1, 2, 3, 4, 5];
const ny = (startHour: number, endHour: number, days = EVERY_DAY): SendWindow => ({ startHour, endHour, days, timezone: 'America/New_York' });
const sp = (startHour: number, endHour: number, days = WEEKDAYS): SendWindow => ({ startHour, endHour, days, timezone: 'America/Sao_Paulo' });

describe('nextSendOpening', () => {
  it.each([
    // 2026-03-08, New York springs forward at 02:00 EST → 03:00 EDT.
    ['before a window that opens in the skipped hour (01:30 EST)', '2026-03-08T06:30:00Z', ny(2, 20), '2026-03-08T07:00:00.000Z'],
    ['the evening before the change, to 09:00 EDT', '2026-03-08T01:00:00Z', ny(9, 17), '2026-03-08T13:00:00.000Z'],
    ['Friday evening before the change, to Monday 09:00 EDT', '2026-03-06T23:00:00Z', ny(9, 17, WEEKDAYS), '2026-03-09T13:00:00.000Z'],
    ['just after the change, before a 04:00 opening', '2026-03-08T07:00:00Z', ny(4, 20), '2026-03-08T08:00:00.000Z'],
    // 2026-11-01, New York falls back at 02:00 EDT → 01:00 EST (01:00–02:00 happens twice).
    ['before a window opening in the repeated hour: its first occurrence', '2026-11-01T04:30:00Z', ny(1, 20), '2026-11-01T05:00:00.000Z'],
    ['the evening before the change, to 09:00 EST', '2026-11-01T00:00:00Z', ny(9, 17), '2026-11-01T14:00:00.000Z'],
    ['after the window closes on the change day, to next day 09:00 EST', '2026-11-01T23:00:00Z', ny(9, 17), '2026-11-02T14:00:00.000Z'],
    // São Paulo has no DST (UTC−3 all year): the seed example's Monday–Friday 9–20 window.
    ['Friday 20:00 in São Paulo, to Monday 09:00', '2026-10-02T23:00:00Z', sp(9, 20), '2026-10-05T12:00:00.000Z'],
    ['Saturday noon in São Paulo, to Monday 09:00', '2026-10-03T15:00:00Z', sp(9, 20), '2026-10-05T12:00:00.000Z'],
    ['Tuesday 07:59 in São Paulo, to 09:00 the same day', '2026-10-06T10:59:00Z', sp(9, 20), '2026-10-06T12:00:00.000Z'],
    ['an hour past midnight with a window to 24', '2026-10-07T03:00:00Z', sp(6, 24, EVERY_DAY), '2026-10-07T09:00:00.000Z'],
  ])('defers a send %s', (_label, at, window, expected) => {
    expect(nextSendOpening(new Date(at), window).toISOString()).toBe(expected);
    expect(isInsideSendWindow(new Date(expected), window)).toBe(true);
  });

  it.each([
    ['the second 01:30 of the fall-back day (EST)', '2026-11-01T06:30:00Z', ny(1, 20)],
    ['the first 01:30 of the fall-back day (EDT)', '2026-11-01T05:30:00Z', ny(1, 20)],
    ['03:00 EDT, the first instant after the spring-forward gap', '2026-03-08T07:00:00Z', ny(2, 20)],
    ['19:59 on a Friday in São Paulo', '2026-10-02T22:59:00Z', sp(9, 20)],
    ['23:30 with a window to 24', '2026-10-07T02:30:00Z', sp(6, 24, EVERY_DAY)],
  ])('sends at once when inside: %s', (_label, at, window) => {
    expect(nextSendOpening(new Date(at), window).toISOString()).toBe(new Date(at).toISOString());
  });

  it('closes at end hour exactly (20:00 is outside a 9–20 window)', () => {
    expect(isInsideSendWindow(new Date('2026-10-02T23:00:00Z'), sp(9, 20))).toBe(false);
  });
});

describe('sendWindowProblems', () => {
  it.each([
    [{ startHour: 9, endHour: 9, days: [1], timezone: 'UTC' }, 'start hour must be before end hour'],
    [{ startHour: 9, endHour: 25, days: [1], timezone: 'UTC' }, 'end hour must be an integer from 1 to 24'],
    [{ startHour: 9, endHour: 20, days: [0], timezone: 'UTC' }, 'days must be ISO weekdays 1 (Monday) to 7 (Sunday)'],
    [{ startHour: 9, endHour: 20, days: [1, 1], timezone: 'UTC' }, 'days must not repeat'],
    [{ startHour: 9, endHour: 20, days: [1], timezone: 'Nowhere/City' }, 'unknown time zone "Nowhere/City"'],
  ])('refuses %j', (window, problem) => {
    expect(sendWindowProblems(window)).toContain(problem);
  });

  it('accepts the seed example window', () => {
    expect(sendWindowProblems(sp(9, 20))).toEqual([]);
  });
});
