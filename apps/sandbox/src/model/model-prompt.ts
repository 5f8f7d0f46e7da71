import he from 'he';

/**
 * Reading a Touchpoint prompt the way the sandbox model needs to: the task name, the data sections
 * (unescaped back to the tenant's text) and the output fields the system message asks for.
 */

/** Reverses the HTML escape ai-gateway applies to tenant text (the `he` library's decode). */
export function unescapeData(text: string): string {
  return he.decode(text);
}

/**
 * The text of section `<tag>` (unescaped; empty for `(none)` or when absent). The first closing tag
 * ends it: tenant text is escaped, so a real `</tag>` can only be the section's own.
 */
export function sectionOf(user: string, tag: string): string {
  const match = new RegExp(`<${tag}>\\n?([\\s\\S]*?)\\n?</${tag}>`).exec(user);
  const body = match?.[1]?.trim() ?? '';
  return body === '(none)' ? '' : unescapeData(body);
}

/** `key: value` lines of a section as a map (lower-case keys). */
export function fieldsOf(section: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of section.split('\n')) {
    const m = /^([A-Za-z_][\w ]*):\s*(.*)$/.exec(line.trim());
    if (m) out[m[1]!.trim().toLowerCase()] = m[2]!.trim();
  }
  return out;
}

/** A field the system message asks for: `- name (type, required): description`. */
export interface AskedField {
  name: string;
  type: string;
  required: boolean;
}

/** The output fields listed in the system message. */
export function askedFields(system: string): AskedField[] {
  const fields: AskedField[] = [];
  for (const m of system.matchAll(/^- ([A-Za-z_][A-Za-z0-9_]*) \((string|number|integer|boolean|array|object)(, required)?\):/gm)) {
    fields.push({ name: m[1]!, type: m[2]!, required: !!m[3] });
  }
  return fields;
}
