import type { AiContact, AiThreadMessage, OutreachContextSections } from '@touchpoint/contracts';
import { codePointLength } from '@touchpoint/text';

/**
 * Shape checks of prompt inputs. Each returns problems in words (`input.reply must be a string`);
 * the RPC answers `validation_failed` with them, so a caller's bug never reaches the model.
 */

/** Longest single text field, characters: the outreach context caps total ≈ 32 000 (seed 003 §4.2). */
export const MAX_TEXT_CHARS = 50_000;
/** Most messages in one thread or summary input. */
export const MAX_MESSAGES = 500;

type Obj = Record<string, unknown>;

export function isObject(value: unknown): value is Obj {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

export function checkString(problems: string[], obj: Obj, field: string, path: string, required: boolean, max = MAX_TEXT_CHARS): void {
  const value = obj[field];
  if (value === undefined || value === null) {
    if (required) problems.push(`${path}.${field} is required`);
    return;
  }
  if (typeof value !== 'string') problems.push(`${path}.${field} must be a string`);
  else if (required && value.trim() === '') problems.push(`${path}.${field} must not be empty`);
  else if (codePointLength(value) > max) problems.push(`${path}.${field} is longer than ${max} characters`);
}

export function checkThread(problems: string[], obj: Obj, field: string, path: string, required: boolean): void {
  const value = obj[field];
  if (value === undefined || value === null) {
    if (required) problems.push(`${path}.${field} is required`);
    return;
  }
  if (!Array.isArray(value)) {
    problems.push(`${path}.${field} must be an array of messages`);
    return;
  }
  if (value.length > MAX_MESSAGES) problems.push(`${path}.${field} has more than ${MAX_MESSAGES} messages`);
  value.forEach((m, i) => {
    const at = `${path}.${field}[${i}]`;
    if (!isObject(m)) return void problems.push(`${at} must be an object`);
    if (m.direction !== 'inbound' && m.direction !== 'outbound') problems.push(`${at}.direction must be inbound or outbound`);
    checkString(problems, m, 'text', at, false);
    if (typeof m.text !== 'string') problems.push(`${at}.text must be a string`);
    checkString(problems, m, 'at', at, false, 64);
    checkString(problems, m, 'channel', at, false, 32);
  });
}

export function checkContact(problems: string[], obj: Obj, field: string, path: string): void {
  const value = obj[field];
  if (value === undefined || value === null) return;
  if (!isObject(value)) return void problems.push(`${path}.${field} must be an object`);
  const at = `${path}.${field}`;
  checkString(problems, value, 'name', at, false, 500);
  checkString(problems, value, 'language', at, false, 35);
  if (value.facts !== undefined && value.facts !== null) {
    if (!isObject(value.facts) || Object.values(value.facts).some((v) => typeof v !== 'string')) problems.push(`${at}.facts must map names to strings`);
  }
}

const OUTREACH_SECTIONS = ['campaign', 'person', 'company', 'signals', 'thread', 'history', 'dossier', 'knowledge'] as const;

export function checkOutreachContext(problems: string[], obj: Obj): void {
  const value = obj.context;
  if (!isObject(value)) return void problems.push('input.context is required (the outreach context sections)');
  for (const name of OUTREACH_SECTIONS) checkString(problems, value, name, 'input.context', name === 'campaign');
  if (value.missing !== undefined && (!Array.isArray(value.missing) || value.missing.some((m) => typeof m !== 'string'))) {
    problems.push('input.context.missing must be an array of section names');
  }
}

/** `[email] 2026-10-27T10:00:00Z inbound: text` per message, in the given order. */
export function threadLines(thread: AiThreadMessage[] | undefined): string[] {
  return (thread ?? []).map((m) => `[${m.channel ?? 'message'}]${m.at ? ` ${m.at}` : ''} ${m.direction}: ${m.text}`);
}

/** `name: …`, `language: …` and one line per fact. */
export function contactLines(contact: AiContact | undefined): string[] {
  if (!contact) return [];
  const lines: string[] = [];
  if (contact.name) lines.push(`name: ${contact.name}`);
  if (contact.language) lines.push(`language: ${contact.language}`);
  for (const [k, v] of Object.entries(contact.facts ?? {})) lines.push(`${k}: ${v}`);
  return lines;
}

/** The outreach context as sections (seed 003 §4.2), with the failed reads named as missing. */
export function outreachContextSections(context: OutreachContextSections): { tag: string; body: string }[] {
  const missing = new Set(context.missing ?? []);
  return OUTREACH_SECTIONS.map((tag) => ({
    tag,
    body: missing.has(tag) ? '(missing: could not be read for this run)' : (context[tag] ?? ''),
  }));
}
