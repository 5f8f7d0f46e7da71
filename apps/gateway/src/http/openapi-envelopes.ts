import type { Type } from '@nestjs/common';
import { ApiProperty, type OpenAPIObject, type ReferenceObject, type SchemaObject } from '@nestjs/swagger';

/**
 * Named wrapper schemas for the document, built from a DTO class, so each answer has its own
 * `components.schemas` entry (a client generator names its types after them). The class `name`
 * is the schema's name: keep it unique across the document.
 */

/** `{data: Inner}` (or `{data: Inner[]}`): every seed-002 answer is wrapped this way. */
export function dataEnvelope(name: string, inner: Type<unknown>, options: { isArray?: boolean; created?: boolean } = {}): Type<unknown> {
  const Envelope = named(name, class {});
  ApiProperty({ type: inner, isArray: options.isArray ?? false })(Envelope.prototype, 'data');
  if (options.created) {
    ApiProperty({ type: Boolean, description: 'false when the operation_key was seen before: the answer is the earlier resource', example: true })(Envelope.prototype, 'created');
  }
  return Envelope;
}

/** Seed 002's cursor page: `{data: Item[], next_cursor}`. */
export function cursorPage(name: string, item: Type<unknown>): Type<unknown> {
  const Page = named(name, class {});
  ApiProperty({ type: item, isArray: true })(Page.prototype, 'data');
  ApiProperty({ type: String, nullable: true, description: 'pass as `cursor` for the next page; null on the last page', example: null })(Page.prototype, 'next_cursor');
  return Page;
}

/** Name of the one list envelope schema of our own routes (seed-002 routes keep `{data: ...}`). */
export const LIST_ENVELOPE = 'ListEnvelope';

/** Schemas that are lists of our own routes: `withListEnvelope` writes each as the envelope plus its `items`. */
const LIST_SCHEMAS = new Set<string>();

/**
 * Marks a DTO class as a list answer of our own routes: `{items: Item[], next_cursor?}`. Its schema
 * is documented as `allOf` the `ListEnvelope` schema and its own `items` (and any extra field).
 */
export function ListEnvelope(): ClassDecorator {
  return (target) => {
    LIST_SCHEMAS.add(target.name);
  };
}

/**
 * A list answer of our own routes: `{items: Item[], next_cursor}`, or `{items}` with
 * `cursor: false` for a list that is always answered whole.
 */
export function itemsPage(name: string, item: Type<unknown>, options: { cursor?: boolean } = {}): Type<unknown> {
  const Page = named(name, class {});
  ApiProperty({ type: item, isArray: true })(Page.prototype, 'items');
  if (options.cursor ?? true) {
    ApiProperty({ type: String, nullable: true, description: 'pass as `cursor` for the next page; null on the last page', example: null })(Page.prototype, 'next_cursor');
  }
  LIST_SCHEMAS.add(name);
  return Page;
}

type Schema = SchemaObject | ReferenceObject;

/**
 * Documents the list envelope once, as `components.schemas.ListEnvelope`, and rewrites each list
 * schema (`itemsPage`, `@ListEnvelope()`) as `allOf: [ListEnvelope, {its items, its extra fields}]`.
 * `next_cursor` is declared on the envelope; a list that pages also lists it as required.
 */
export function withListEnvelope(document: OpenAPIObject): OpenAPIObject {
  const schemas: Record<string, Schema> = ((document.components ??= {}).schemas ??= {});
  schemas[LIST_ENVELOPE] = {
    type: 'object',
    description:
      'The list envelope of every list of our own routes: `items`, in the order the route states, and `next_cursor` on a list that pages. ' +
      'The follow-up routes of seed 002 (`/ai/followup-flows`, `/ai/followups/...`, `/ai/agents`, `/ai/promises`) answer `{data: ...}` instead, as the seed defines.',
    properties: {
      next_cursor: {
        type: 'string',
        nullable: true,
        description: 'On a list that pages: pass as `cursor` for the next page; null on the last page. Absent on a list that is always answered whole.',
        example: null,
      },
    },
  };
  for (const name of LIST_SCHEMAS) {
    const schema = schemas[name];
    if (!schema || '$ref' in schema || !schema.properties?.items) continue;
    const own = Object.fromEntries(Object.entries(schema.properties).filter(([field]) => field !== 'next_cursor'));
    schemas[name] = {
      allOf: [{ $ref: `#/components/schemas/${LIST_ENVELOPE}` }, { type: 'object', required: schema.required, properties: own }],
    };
  }
  return document;
}

function named<T extends Type<unknown>>(name: string, cls: T): T {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}
