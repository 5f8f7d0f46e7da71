import type { Type } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';

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

/** Messaging's cursor page: `{items: Item[], next_cursor}`. */
export function itemsPage(name: string, item: Type<unknown>, options: { cursor?: boolean } = {}): Type<unknown> {
  const Page = named(name, class {});
  ApiProperty({ type: item, isArray: true })(Page.prototype, 'items');
  if (options.cursor ?? true) {
    ApiProperty({ type: String, nullable: true, description: 'pass as `cursor` for the next page; null on the last page', example: null })(Page.prototype, 'next_cursor');
  }
  return Page;
}

function named<T extends Type<unknown>>(name: string, cls: T): T {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}
