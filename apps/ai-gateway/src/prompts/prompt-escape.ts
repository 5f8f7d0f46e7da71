/** The characters that could open or close a tag, or end an attribute, and their entities. */
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' };

/**
 * HTML-escapes tenant text before it goes inside a prompt section, as Python's `html.escape` does,
 * so no text can open or close a tag and forge a section (seed 003 §4.2, render()). `&` first by
 * construction: the single pass never re-escapes its own output.
 */
export function escapeData(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}
