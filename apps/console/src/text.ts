/**
 * Text helpers of the console. Cuts count user-perceived characters (grapheme clusters, by
 * Intl.Segmenter), never UTF-16 units, so an emoji or an accented letter is never split.
 */
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The number of grapheme clusters in `text`. */
export function graphemeLength(text: string): number {
  let count = 0;
  for (const _ of segmenter.segment(text)) count++;
  return count;
}

/** `text` cut at `max` grapheme clusters, with `…` when it was longer. */
export function cutText(text: string, max: number): string {
  let out = '';
  let count = 0;
  for (const { segment } of segmenter.segment(text)) {
    if (count === max) return `${out}…`;
    out += segment;
    count++;
  }
  return out;
}

/** A duration in seconds as the card shows an age: `45 s`, `12 min`, `3 h`, `2 d`. */
export function formatAge(seconds: number): string {
  if (seconds < 60) return `${Math.max(0, Math.floor(seconds))} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86_400)} d`;
}

/** An ISO time as a short local date and time, or `—` for none. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}
