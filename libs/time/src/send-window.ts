import { DateTime, IANAZone } from 'luxon';

/**
 * A weekly send window in a time zone (seed 000 "send window → defer to opening"; seed 002 flow
 * settings `send_start_hour`, `send_end_hour`, `send_days`, `timezone`).
 *
 * Hours are wall-clock hours of `timezone`: a send may go out from `startHour:00` up to (not
 * including) `endHour:00`. `days` are ISO weekdays, 1 = Monday … 7 = Sunday.
 */
export interface SendWindow {
  /** 0–23. */
  startHour: number;
  /** 1–24, greater than `startHour`. */
  endHour: number;
  /** ISO weekdays (1 = Monday … 7 = Sunday); at least one. */
  days: readonly number[];
  /** IANA zone (`America/Sao_Paulo`). */
  timezone: string;
}

/** Whether `zone` is an IANA time zone luxon knows. */
export function isValidTimeZone(zone: string): boolean {
  return typeof zone === 'string' && IANAZone.isValidZone(zone);
}

/** Problems of a window's shape (empty when valid). */
export function sendWindowProblems(window: SendWindow): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(window.startHour) || window.startHour < 0 || window.startHour > 23) problems.push('start hour must be an integer from 0 to 23');
  if (!Number.isInteger(window.endHour) || window.endHour < 1 || window.endHour > 24) problems.push('end hour must be an integer from 1 to 24');
  if (window.startHour >= window.endHour) problems.push('start hour must be before end hour');
  if (!Array.isArray(window.days) || window.days.length === 0 || !window.days.every((d) => Number.isInteger(d) && d >= 1 && d <= 7)) problems.push('days must be ISO weekdays 1 (Monday) to 7 (Sunday)');
  else if (new Set(window.days).size !== window.days.length) problems.push('days must not repeat');
  if (!isValidTimeZone(window.timezone)) problems.push(`unknown time zone "${window.timezone}"`);
  return problems;
}

/** Whether a send at `at` falls inside the window (wall-clock hour of the zone at that instant). */
export function isInsideSendWindow(at: Date, window: SendWindow): boolean {
  const local = DateTime.fromJSDate(at, { zone: window.timezone });
  return window.days.includes(local.weekday) && local.hour >= window.startHour && local.hour < window.endHour;
}

/**
 * The first instant at or after `at` when a send may go out: `at` itself when inside the window,
 * else the next opening (`startHour:00` local on the next allowed day).
 *
 * Correct across DST changes because the opening is built from the local calendar day in the zone
 * (luxon), not by adding 24-hour steps: on a spring-forward day an opening that falls in the
 * skipped hour moves to the first instant that exists (02:00 → 03:00 in New York on 2026-03-08);
 * on a fall-back day an opening in the repeated hour is its first occurrence.
 * @returns a UTC Date
 */
export function nextSendOpening(at: Date, window: SendWindow): Date {
  if (isInsideSendWindow(at, window)) return at;
  const local = DateTime.fromJSDate(at, { zone: window.timezone });
  // A window opens at most 7 days later; 8 covers the day we are on.
  for (let offset = 0; offset <= 8; offset++) {
    const day = local.startOf('day').plus({ days: offset });
    if (!window.days.includes(day.weekday)) continue;
    const opening = openingOn(day, window.startHour);
    if (opening.toMillis() > at.getTime()) return opening.toJSDate();
    // Past this day's opening: inside the window would have returned above, so the day is over.
  }
  throw new Error('send window has no opening within 8 days (invalid window)');
}

/**
 * `hour:00` on the local calendar day `day`. An hour that a spring-forward change skips does not
 * exist; luxon then moves the wall-clock time forward by the gap (02:00 → 03:00), which is the first
 * instant of that day's window.
 */
function openingOn(day: DateTime, hour: number): DateTime {
  return day.set({ hour, minute: 0, second: 0, millisecond: 0 });
}
