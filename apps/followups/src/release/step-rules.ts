import { DateTime } from 'luxon';
import { normalizeText } from '@touchpoint/text';
import type { ContactActivity } from '../contacts/contacts.repository.js';
import type { EnrollmentRow } from '../enrollments/enrollment-row.js';
import { type ConditionConfig, type ConditionRule, DEFAULT_BRANCH, type MatchReplyConfig } from '../graph/node-config.js';

/**
 * Pure rules of the release step (seed 000 "Release"): conditions, reply matching, template
 * rendering and failure backoff. No I/O, so they are unit-tested with many cases.
 */

/** First backoff after an unexpected error, ms (seed 000: "backs off exponentially (30 s … 1 h)"). */
export const FAILURE_BACKOFF_BASE_MS = 30_000;
/** Largest backoff, ms (seed 000). */
export const FAILURE_BACKOFF_CAP_MS = 3_600_000;

/** Backoff after the `failures`-th consecutive failure (1-based): 30 s, 60 s, 120 s … capped at 1 h. */
export function failureBackoffMs(failures: number): number {
  return Math.min(FAILURE_BACKOFF_CAP_MS, FAILURE_BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1));
}

/** What a condition or template can read. */
export interface StepFacts {
  contact: Pick<ContactActivity, 'name' | 'phone' | 'email' | 'tags' | 'fields'>;
  enrollment: Pick<EnrollmentRow, 'variables' | 'anchor_at' | 'last_send_status'>;
  /** Zone for `anchor.*` formatting (the flow's send-window zone). */
  timezone: string;
}

function resolveField(field: string, facts: StepFacts): unknown {
  if (field === 'contact.tags') return facts.contact.tags ?? [];
  if (field === 'contact.name') return facts.contact.name;
  if (field === 'contact.phone') return facts.contact.phone;
  if (field === 'contact.email') return facts.contact.email;
  if (field === 'last_send.status') return facts.enrollment.last_send_status;
  if (field.startsWith('contact.fields.')) return facts.contact.fields?.[field.slice('contact.fields.'.length)];
  if (field.startsWith('vars.')) return facts.enrollment.variables?.[field.slice('vars.'.length)];
  return undefined;
}

const isEmpty = (v: unknown): boolean => v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);
const same = (a: unknown, b: unknown): boolean => (typeof a === 'string' && typeof b === 'string' ? normalizeText(a) === normalizeText(b) : String(a) === String(b));

/** One rule. Lists (tags) match `eq`/`contains`/`in` when any element does. */
export function evaluateRule(rule: ConditionRule, facts: StepFacts): boolean {
  const actual = resolveField(rule.field, facts);
  const values = Array.isArray(actual) ? actual : [actual];
  switch (rule.op) {
    case 'exists':
      return !isEmpty(actual);
    case 'not_exists':
      return isEmpty(actual);
    case 'eq':
      return !isEmpty(actual) && values.some((v) => same(v, rule.value));
    case 'neq':
      return !values.some((v) => same(v, rule.value));
    case 'contains':
      return Array.isArray(actual) ? values.some((v) => same(v, rule.value)) : typeof actual === 'string' && normalizeText(actual).includes(normalizeText(String(rule.value)));
    case 'not_contains':
      return !evaluateRule({ ...rule, op: 'contains' }, facts);
    case 'in':
      return Array.isArray(rule.value) && values.some((v) => (rule.value as unknown[]).some((w) => same(v, w)));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const n = typeof actual === 'number' ? actual : typeof actual === 'string' && actual.trim() !== '' ? Number(actual) : NaN;
      const limit = rule.value as number;
      if (Number.isNaN(n)) return false;
      return rule.op === 'gt' ? n > limit : rule.op === 'gte' ? n >= limit : rule.op === 'lt' ? n < limit : n <= limit;
    }
  }
}

/** A condition node: every rule (`all`) or one of them (`any`). */
export function evaluateCondition(config: ConditionConfig, facts: StepFacts): boolean {
  return config.match === 'any' ? config.rules.some((r) => evaluateRule(r, facts)) : config.rules.every((r) => evaluateRule(r, facts));
}

/** Words of a text, accent- and case-insensitive, punctuation as spaces. */
const words = (text: string): string =>
  ` ${normalizeText(text)
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()} `;

/**
 * The branch of a `match_reply` node: the first branch with a keyword found in the reply as whole
 * words (accent- and case-insensitive), else `default`.
 */
export function matchReply(config: MatchReplyConfig, reply: string | null): string {
  if (!reply) return DEFAULT_BRANCH;
  const haystack = words(reply);
  for (const branch of config.branches) {
    if (branch.keywords.some((k) => words(k).trim() !== '' && haystack.includes(words(k)))) return branch.id;
  }
  return DEFAULT_BRANCH;
}

/** `{{ vars.x }}`, `{{anchor.date}}`, `{{contact.first_name}}`. */
const PLACEHOLDER = /\{\{\s*([a-z_]+(?:\.[A-Za-z0-9_]+)?)\s*\}\}/g;

/** A value for a placeholder, or undefined when it is missing. */
function placeholderValue(name: string, facts: StepFacts): string | undefined {
  const anchor = facts.enrollment.anchor_at ? DateTime.fromJSDate(facts.enrollment.anchor_at, { zone: facts.timezone }) : undefined;
  const present = (v: unknown): string | undefined => (v === undefined || v === null || v === '' ? undefined : String(v));
  switch (name) {
    case 'anchor.at':
      return anchor?.toFormat('dd/MM/yyyy HH:mm');
    case 'anchor.date':
      return anchor?.toFormat('dd/MM/yyyy');
    case 'anchor.time':
      return anchor?.toFormat('HH:mm');
    case 'contact.name':
      return present(facts.contact.name);
    case 'contact.first_name':
      return present(facts.contact.name?.trim().split(/\s+/)[0]);
  }
  if (name.startsWith('vars.')) return present(facts.enrollment.variables?.[name.slice(5)]);
  return undefined;
}

/**
 * Renders `{{…}}` placeholders (seed 000 "render": a missing `vars.*` or `anchor.*` value skips the send).
 * @returns the text, or `{missing}` naming the first placeholder without a value
 */
export function renderTemplate(text: string, facts: StepFacts): { text: string } | { missing: string } {
  let missing: string | undefined;
  const out = text.replace(PLACEHOLDER, (_all, name: string) => {
    const value = placeholderValue(name, facts);
    if (value === undefined) missing ??= name;
    return value ?? '';
  });
  return missing ? { missing } : { text: out };
}
