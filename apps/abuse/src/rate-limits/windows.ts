import { DateTime } from 'luxon';

/** The limits that apply to one message (a `rate_limit_config` row). */
export interface RateLimits {
  per_minute: number;
  per_hour: number;
  per_day: number;
  per_instance: number;
}

/** The counters of one conversation (seed 004 "Storage in conversation Table": rate_limit_data). */
export interface RateCounters {
  minute_count: number;
  minute_reset_at: Date | null;
  hourly_count: number;
  hourly_reset_at: Date | null;
  daily_count: number;
  daily_reset_at: Date | null;
  is_throttled: boolean;
  throttled_until: Date | null;
  throttle_limit: 'minute' | 'hour' | 'day' | null;
}

export type CountOutcome = { allowed: true; counters: RateCounters } | { allowed: false; limit: 'minute' | 'hour' | 'day'; resetAt: Date; counters: RateCounters };

/**
 * Counts one message against fixed windows that reset on the clock (seed 004: "counters reset on
 * the clock"): the minute at the next whole minute, the hour at the next whole hour, the day at the
 * next UTC midnight. A message over a limit is not counted; it throttles the conversation until
 * that window resets, and every message until then is rejected with the same limit.
 */
export function countMessage(current: RateCounters, limits: RateLimits, now: Date): CountOutcome {
  const at = DateTime.fromJSDate(now, { zone: 'utc' });
  const next = { ...current };
  if (!next.minute_reset_at || next.minute_reset_at <= now) {
    next.minute_count = 0;
    next.minute_reset_at = at.startOf('minute').plus({ minutes: 1 }).toJSDate();
  }
  if (!next.hourly_reset_at || next.hourly_reset_at <= now) {
    next.hourly_count = 0;
    next.hourly_reset_at = at.startOf('hour').plus({ hours: 1 }).toJSDate();
  }
  if (!next.daily_reset_at || next.daily_reset_at <= now) {
    next.daily_count = 0;
    next.daily_reset_at = at.startOf('day').plus({ days: 1 }).toJSDate();
  }
  if (next.is_throttled && next.throttled_until && next.throttled_until > now && next.throttle_limit) {
    return { allowed: false, limit: next.throttle_limit, resetAt: next.throttled_until, counters: next };
  }
  next.is_throttled = false;
  next.throttled_until = null;
  next.throttle_limit = null;

  const over: ['minute' | 'hour' | 'day', Date][] = [];
  if (next.minute_count + 1 > limits.per_minute) over.push(['minute', next.minute_reset_at]);
  if (next.hourly_count + 1 > limits.per_hour) over.push(['hour', next.hourly_reset_at]);
  if (next.daily_count + 1 > limits.per_day) over.push(['day', next.daily_reset_at]);
  if (over.length > 0) {
    // The longest window decides how long the conversation stays throttled.
    const [limit, resetAt] = over.reduce((a, b) => (b[1] > a[1] ? b : a));
    next.is_throttled = true;
    next.throttled_until = resetAt;
    next.throttle_limit = limit;
    return { allowed: false, limit, resetAt, counters: next };
  }
  next.minute_count += 1;
  next.hourly_count += 1;
  next.daily_count += 1;
  return { allowed: true, counters: next };
}
