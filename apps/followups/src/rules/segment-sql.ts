import type { FlowTriggerFilter } from '@touchpoint/contracts';

/** A segment of contacts (seed 000 "segment conditions compiled to SQL"). */
export type Segment = NonNullable<FlowTriggerFilter['segment']>;

const TEXT_FIELDS: Record<string, string> = { 'contact.name': 'c.name', 'contact.phone': 'c.phone', 'contact.email': 'c.email' };
const NUMBER = `'^-?[0-9]+(\\.[0-9]+)?$'`;

/**
 * Compiles a segment to a boolean SQL expression over `contacts c`, appending its values to
 * `params` (never interpolated). Fields: `contact.tags` (contains, not_contains, in, exists,
 * not_exists), `contact.name|phone|email` and `contact.fields.<key>` (eq, neq, contains,
 * not_contains, in, exists, not_exists; custom fields also gt, gte, lt, lte on numbers).
 * @throws Error naming the rule when a field or operator is not supported
 */
export function compileSegment(segment: Segment, params: unknown[]): string {
  if (!segment.rules.length) return 'true';
  const parts = segment.rules.map((rule, i) => `(${compileRule(rule, params, i)})`);
  return parts.join(segment.match === 'any' ? ' OR ' : ' AND ');
}

function compileRule(rule: Segment['rules'][number], params: unknown[], index: number): string {
  const p = (v: unknown) => `$${params.push(v)}`;
  const unsupported = () => new Error(`segment rule ${index}: ${rule.op} is not supported on ${rule.field}`);
  if (rule.field === 'contact.tags') {
    switch (rule.op) {
      case 'contains':
        return `${p(String(rule.value))} = ANY(c.tags)`;
      case 'not_contains':
        return `NOT (${p(String(rule.value))} = ANY(c.tags))`;
      case 'in':
        return `c.tags && ${p(asList(rule.value))}::text[]`;
      case 'exists':
        return 'cardinality(c.tags) > 0';
      case 'not_exists':
        return 'cardinality(c.tags) = 0';
      default:
        throw unsupported();
    }
  }
  let column: string;
  let custom = false;
  if (TEXT_FIELDS[rule.field]) column = TEXT_FIELDS[rule.field]!;
  else if (rule.field.startsWith('contact.fields.') && /^[A-Za-z0-9_]{1,64}$/.test(rule.field.slice(15))) {
    column = `(c.fields ->> ${p(rule.field.slice(15))})`;
    custom = true;
  } else throw new Error(`segment rule ${index}: unknown field ${rule.field}`);
  switch (rule.op) {
    case 'eq':
      return `lower(${column}) = lower(${p(String(rule.value))})`;
    case 'neq':
      return `${column} IS NULL OR lower(${column}) <> lower(${p(String(rule.value))})`;
    case 'contains':
      return `${column} ILIKE ${p(`%${escapeLike(String(rule.value))}%`)}`;
    case 'not_contains':
      return `${column} IS NULL OR ${column} NOT ILIKE ${p(`%${escapeLike(String(rule.value))}%`)}`;
    case 'in':
      return `lower(${column}) = ANY(${p(asList(rule.value).map((v) => v.toLowerCase()))}::text[])`;
    case 'exists':
      return `coalesce(${column}, '') <> ''`;
    case 'not_exists':
      return `coalesce(${column}, '') = ''`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      if (!custom || typeof rule.value !== 'number') throw unsupported();
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[rule.op];
      // A value that is not a number never matches (rather than failing the whole query).
      return `CASE WHEN ${column} ~ ${NUMBER} THEN ${column}::numeric ${op} ${p(rule.value)} ELSE false END`;
    }
    default:
      throw unsupported();
  }
}

const asList = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : value === undefined ? [] : [String(value)]);
const escapeLike = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);
