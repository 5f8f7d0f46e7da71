import he from 'he';

/**
 * HTML-escapes tenant text before it goes inside a prompt section (`&`, `<`, `>`, `"`, `'` and the
 * backtick become entities, `'` as `&#x27;` as Python's `html.escape` writes it), so no text can
 * open or close a tag and forge a section (seed 003 §4.2, render()). The `he` library's escape:
 * one pass, never re-escaping its own output.
 */
export function escapeData(text: string): string {
  return he.escape(text);
}
