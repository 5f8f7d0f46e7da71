import * as chrono from 'chrono-node';
import { DateTime } from 'luxon';
import { stripQuotedText } from './index.js';

/** The return date an out-of-office message states, as a calendar date of the writer's zone. */
export interface ReturnDate {
  /** `YYYY-MM-DD`, the day the writer says they are back (or the last day they are away). */
  date: string;
  /** The words the date was read from, as written (`on Monday 7 December`, `10/12`). */
  text: string;
}

export interface ReturnDateOptions {
  /** When the message was received: relative words ("Monday", "next week") count from it. */
  receivedAt: Date;
  /** IANA zone of the writer (the contact's, else the organization's); absent → UTC. */
  timeZone?: string | null;
}

/**
 * German writes a short date as `8.12.` (day, month, a closing dot). chrono reads `8.12.2026` but
 * leaves the year-less form out, because `8.12` may be a decimal number. The closing dot and the
 * absence of a following digit make it a date; this is a chrono parser (chrono's extension point),
 * and chrono still does the rest: the year, a past date moved forward, the zone.
 */
const GERMAN_SHORT_DATE = /(?<![\d.,])([0-3]?\d)\.([01]?\d)\.(?!\d)/;

function germanParser(): chrono.Chrono {
  const parser = chrono.de.casual.clone();
  parser.parsers.push({
    pattern: () => GERMAN_SHORT_DATE,
    extract: (_context, match) => {
      const day = Number(match[1]);
      const month = Number(match[2]);
      if (month < 1 || month > 12 || day < 1 || day > 31) return null;
      return { day, month };
    },
  });
  return parser;
}

/**
 * The parsers of the five languages we read (EN, PT, ES, DE, FR). English uses chrono's British
 * configuration, so every numeric date is read day first as in the other four (`10/12` is the 10th
 * of December in each of them): one reading, whatever language the message is in.
 */
const PARSERS: readonly chrono.Chrono[] = [chrono.en.GB, chrono.pt.casual, chrono.es.casual, germanParser(), chrono.fr.casual];

/**
 * The date an out-of-office auto-reply says its writer is back, or null when it states none.
 * Used by outreach to move the enrollment's next check past the absence (seed 003 §4.7: an
 * auto-reply starts nothing; the rest is ours). Dates are read by chrono-node's EN, PT, ES, DE and
 * FR parsers, never by hand, from the new text only (quoted text stripped, as in seed 003 §4.2):
 * - relative words count from `receivedAt`, in `timeZone` (its UTC offset at that instant);
 * - a date without a year that already passed is read as next year's (chrono's `forwardDate`);
 * - only mentions that name a day count (a date, a weekday); a bare time ("after 3pm") does not;
 * - a range counts by its end ("away from 1 to 7 December" → the 7th);
 * - where readings of two languages overlap, the longer one wins;
 * - of every date found, the earliest after the day of `receivedAt` wins: a message also names the
 *   day it was written or the day the absence began, and a past day-month read as next year's
 *   ("since 30 November") is later than the return date it sits beside.
 * Pure, no I/O.
 */
export function findReturnDate(text: string | null | undefined, options: ReturnDateOptions): ReturnDate | null {
  const body = stripQuotedText(text ?? '');
  if (body === '') return null;
  const zone = options.timeZone && DateTime.local().setZone(options.timeZone).isValid ? options.timeZone : 'UTC';
  const received = DateTime.fromJSDate(options.receivedAt, { zone });
  const reference = { instant: options.receivedAt, timezone: received.offset };
  const today = received.toISODate()!;
  const found: { index: number; end: number; date: string; text: string }[] = [];
  for (const parser of PARSERS) {
    for (const result of parser.parse(body, reference, { forwardDate: true })) {
      const point = result.end ?? result.start;
      if (!namesADay(result.start) && !namesADay(point)) continue;
      const date = calendarDate(point);
      if (date) found.push({ index: result.index, end: result.index + result.text.length, date, text: result.text });
    }
  }
  // Where two languages read overlapping words, the longer reading wins ("jeudi 3 décembre" in
  // French over "3 d", three days, in English).
  found.sort((a, b) => b.end - b.index - (a.end - a.index) || a.index - b.index);
  const kept: typeof found = [];
  for (const f of found) if (!kept.some((k) => f.index < k.end && k.index < f.end)) kept.push(f);
  let best: ReturnDate | null = null;
  for (const k of kept) if (k.date > today && (!best || k.date < best.date)) best = { date: k.date, text: k.text };
  return best;
}

function namesADay(c: chrono.ParsedComponents): boolean {
  return c.isCertain('day') || c.isCertain('weekday');
}

function calendarDate(c: chrono.ParsedComponents): string | null {
  const d = DateTime.fromObject({ year: c.get('year') ?? undefined, month: c.get('month') ?? undefined, day: c.get('day') ?? undefined }, { zone: 'UTC' });
  return d.isValid ? d.toISODate() : null;
}
