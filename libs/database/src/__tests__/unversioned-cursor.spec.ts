import { randomUUID } from 'node:crypto';
import { decodeCursor, encodeCursor, pageSize } from '../keyset-cursor.js';

/** A cursor as messaging's lists issued them before the one keyset cursor: `{at, id}`, milliseconds. */
const unversioned = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('decodeCursor with acceptUnversioned', () => {
  const id = '0ecedf21-1899-4f1b-ac3f-aef2715e4aa9';
  const filters = { contact_id: undefined, status: 'open' };

  it('reads a cursor a client already holds as the same millisecond, in microseconds', () => {
    expect(decodeCursor(unversioned({ at: '2026-01-01T00:00:00.123Z', id }), filters, { acceptUnversioned: true })).toEqual({ createdAt: '2026-01-01T00:00:00.123000Z', id, kind: undefined });
  });

  it('still reads the cursors it issues now, bound to their filters', () => {
    const position = { createdAt: '2026-01-01T00:00:00.123456Z', id: randomUUID() };
    const cursor = encodeCursor(position, filters);
    expect(decodeCursor(cursor, filters, { acceptUnversioned: true })).toMatchObject(position);
    expect(() => decodeCursor(cursor, { ...filters, status: 'resolved' }, { acceptUnversioned: true })).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });

  it('refuses an unversioned cursor unless asked to accept one', () => {
    expect(() => decodeCursor(unversioned({ at: '2026-01-01T00:00:00.123Z', id }), filters)).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });

  it.each([
    ['a non-UUID id', unversioned({ at: '2026-01-01T00:00:00.000Z', id: 'x' })],
    ['an array id', unversioned({ at: '2026-01-01T00:00:00.000Z', id: ['a'] })],
    ['a bad date', unversioned({ at: 'yesterday', id })],
    ['no date', unversioned({ id })],
    ['garbage', '%%%'],
  ])('refuses %s with invalid_cursor', (_name, cursor) => {
    expect(() => decodeCursor(cursor, filters, { acceptUnversioned: true })).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });
});

describe('pageSize', () => {
  it.each([
    [undefined, 50],
    [1, 1],
    ['200', 200],
  ])('reads limit %p as %p', (limit, expected) => {
    expect(pageSize(limit)).toBe(expected);
  });

  it('uses the given maximum and fallback', () => {
    expect(pageSize(undefined, 500, 200)).toBe(200);
    expect(pageSize(500, 500, 200)).toBe(500);
  });

  it.each([0, 201, 1.5, 'ten', -1])('refuses limit %p with validation_failed naming the field', (limit) => {
    expect(() => pageSize(limit)).toThrow(expect.objectContaining({ code: 'validation_failed', details: { field: 'limit' } }));
  });
});
