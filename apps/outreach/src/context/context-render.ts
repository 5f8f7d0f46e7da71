import { codePointLength, stripQuotedText, truncateText } from '@touchpoint/text';

/** Marks a section cut at its cap (seed 003 §4.2, The cap). */
export const CUT_MARK = '(cut to fit)';

/**
 * Caps per section, characters (ours: the seed gives about 32,000 characters in all as the sum of
 * the caps; the thread and the history get the most room).
 */
export const SECTION_CAPS = {
  campaign: 2000,
  person: 2000,
  company: 2000,
  signals: 2000,
  thread: 12_000,
  history: 6000,
  dossier: 4000,
  knowledge: 2000,
} as const;
export type SectionName = keyof typeof SECTION_CAPS;

/**
 * The one cap rule (seed 003 §4.2): the items are rendered in priority order and, when the text
 * is longer than the cap, it is cut at the cap and ends with "(cut to fit)". The order keeps the
 * important part: a cut removes only the tail.
 */
export function capSection(items: string[], cap: number): string {
  const text = items.filter((i) => i !== '').join('\n');
  if (codePointLength(text) <= cap) return text;
  return `${truncateText(text, Math.max(0, cap - CUT_MARK.length - 1)).trimEnd()}\n${CUT_MARK}`;
}

/**
 * The new text of a message as outreach shows it (seed 003 §4.2, The thread): the quoted earlier
 * text stripped (libs/text `stripQuotedText`), whitespace folded. The context's thread lines and the
 * review card's "Replying to" both use it, so a reviewer reads what the agent read.
 */
export function newTextOf(text: string | null | undefined): string {
  return stripQuotedText(text ?? '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** A thread line: `[email] 2026-10-27 inbound: text`, quoted earlier text stripped, whitespace folded. */
export function threadLine(channel: string, at: string, direction: string, text: string | null, subject?: string | null): string {
  const body = newTextOf(text);
  const withSubject = subject && direction === 'outbound' ? `(${subject}) ${body}` : body;
  return `[${channel}] ${at.slice(0, 10)} ${direction}: ${withSubject}`;
}

/** `name: value` lines, skipping empty values. */
export function fieldLines(fields: Record<string, unknown>): string[] {
  return Object.entries(fields)
    .filter(([, v]) => v !== null && v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
}
