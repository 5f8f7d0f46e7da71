import type { AiFieldType, AiOutputSchema } from '@touchpoint/contracts';
import { toStorableJson } from '@touchpoint/text';

/** Result of checking a model's answer against the caller's schema. */
export type OutputCheck = { valid: true; output: Record<string, unknown> } | { valid: false; reason: string; output: unknown };

/** A whole answer wrapped in one Markdown code fence, which some local models add even in JSON mode. */
const FENCED = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i;

/**
 * Parses the answer as JSON and checks only the fields the caller requires, with their types; other
 * fields are kept and ignored (seed 003 §4.3, NextAction: the caller's post-check owns strict rules).
 * Null counts as missing. No second call is ever made for a slip: the caller gets `invalid_output`.
 */
export function checkOutput(content: string | null, schema: AiOutputSchema): OutputCheck {
  const text = (content ?? '').trim();
  if (text === '') return { valid: false, reason: 'empty output', output: null };
  let parsed: unknown;
  try {
    // A model may write half an emoji as a `\ud83d` escape, or a NUL as `\u0000`; jsonb would refuse
    // the stored result (and the run with it): each becomes U+FFFD.
    parsed = toStorableJson(JSON.parse(FENCED.exec(text)?.[1] ?? text));
  } catch {
    return { valid: false, reason: 'output is not valid JSON', output: null };
  }
  if (!isPlainObject(parsed)) return { valid: false, reason: 'output is not a JSON object', output: parsed };
  const problems: string[] = [];
  for (const [field, type] of Object.entries(schema.required)) {
    const value = parsed[field];
    if (value === undefined || value === null) problems.push(`missing required field "${field}"`);
    else if (!hasType(value, type)) problems.push(`field "${field}" must be ${article(type)} ${type}, got ${typeName(value)}`);
  }
  return problems.length ? { valid: false, reason: problems.join('; '), output: parsed } : { valid: true, output: parsed };
}

function hasType(value: unknown, type: AiFieldType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isPlainObject(value);
    default: {
      const never: never = type;
      return never;
    }
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function typeName(value: unknown): string {
  return Array.isArray(value) ? 'array' : typeof value;
}

function article(type: AiFieldType): string {
  return /^[aeiou]/.test(type) ? 'an' : 'a';
}
