import { createHash } from 'node:crypto';
import type { AbusePatternType } from '@touchpoint/contracts';
import { normalizeText } from '@touchpoint/text';

/** Patterns are looked for on every Nth counted message of a conversation (seed 004 "Pattern Detection"). */
export const PATTERN_CHECK_EVERY = 5;
/** Messages closer than this are flooding (seed 004: "< 2 seconds between messages"), ms. */
export const FLOOD_GAP_MS = 2000;
/** How many of the window's gaps must be that short to call it flooding. */
export const FLOOD_MIN_SHORT_GAPS = 3;
/** How many identical messages in the window make spam (seed 004: "identical repeated messages"). */
export const SPAM_MIN_IDENTICAL = 3;
/** How many gibberish messages in the window make the gibberish pattern. */
export const GIBBERISH_MIN_MESSAGES = 3;
/** Only short messages can be gibberish (seed 004: "short meaningless content"), characters. */
export const GIBBERISH_MAX_LENGTH = 40;

/** One counted message as the detector remembers it (the counter row keeps the last five). */
export interface RecentMessage {
  /** Provider id (wamid). */
  ref: string;
  /** ISO-8601 send instant. */
  at: string;
  /** Hash of the normalised text; null for media without text. */
  hash: string | null;
  gibberish: boolean;
}

export interface DetectedPattern {
  type: AbusePatternType;
  /** 0..1: the share of the window showing it. */
  confidence: number;
  details: Record<string, unknown>;
}

/** Hash of a message's normalised text (so "Hi!" and "hi" are identical repeats). */
export function textHash(text: string | null): string | null {
  if (!text) return null;
  const normalized = normalizeText(text).replace(/[^\p{L}\p{N}]+/gu, '');
  return normalized ? createHash('sha1').update(normalized).digest('hex').slice(0, 16) : null;
}

/** Laughter and similar are repetitive but mean something; never gibberish. */
const LAUGHTER = /^(k{3,}|(ha)+h?|(he)+h?|(hi)+h?|(ja)+j?|(je)+j?|(rs)+|l+o+l+|x+d+)$/;
/** Runs along a keyboard row. */
const KEYBOARD_RUNS = ['qwert', 'werty', 'asdf', 'sdfg', 'dfgh', 'fghj', 'ghjk', 'hjkl', 'zxcv', 'xcvb', 'cvbn', 'vbnm', 'poiu', 'lkjh', 'mnbv'];

/**
 * Whether a message is short meaningless content (seed 004 "Gibberish"): at most
 * GIBBERISH_MAX_LENGTH characters, and at least half of its words of 4+ letters are keyboard
 * mashing (a keyboard-row run, no vowel at all, five consonants in a row, or one letter repeated
 * four times). Laughter ("kkkk", "hahaha") is not gibberish; media without text is not either.
 */
export function isGibberish(text: string | null): boolean {
  if (!text) return false;
  const normalized = normalizeText(text);
  if (normalized.length === 0 || normalized.length > GIBBERISH_MAX_LENGTH) return false;
  const words = normalized.split(/[^\p{L}]+/u).filter((w) => w.length >= 4);
  if (words.length === 0) return false;
  const mashed = words.filter((word) => {
    if (LAUGHTER.test(word)) return false;
    if (KEYBOARD_RUNS.some((run) => word.includes(run))) return true;
    if (!/[aeiouy]/.test(word)) return true;
    if (/[^aeiouy]{5,}/.test(word)) return true;
    return /(.)\1{3,}/.test(word);
  });
  return mashed.length * 2 >= words.length;
}

/**
 * Looks for spam, flooding and gibberish in the last messages of a conversation (oldest first).
 * Pure: the same window always gives the same answer.
 */
export function detectPatterns(window: RecentMessage[]): DetectedPattern[] {
  const found: DetectedPattern[] = [];
  if (window.length < 2) return found;

  const byHash = new Map<string, number>();
  for (const m of window) if (m.hash) byHash.set(m.hash, (byHash.get(m.hash) ?? 0) + 1);
  const repeats = Math.max(0, ...byHash.values());
  if (repeats >= SPAM_MIN_IDENTICAL) found.push({ type: 'spam', confidence: repeats / window.length, details: { identical: repeats, window: window.length } });

  const times = window.map((m) => Date.parse(m.at)).sort((a, b) => a - b);
  const gaps = times.slice(1).map((t, i) => t - times[i]);
  const short = gaps.filter((g) => g < FLOOD_GAP_MS).length;
  if (short >= Math.min(FLOOD_MIN_SHORT_GAPS, gaps.length)) {
    found.push({ type: 'flooding', confidence: short / gaps.length, details: { short_gaps: short, gaps_ms: gaps } });
  }

  const gibberish = window.filter((m) => m.gibberish).length;
  if (gibberish >= GIBBERISH_MIN_MESSAGES) found.push({ type: 'gibberish', confidence: gibberish / window.length, details: { gibberish, window: window.length } });

  return found;
}
