import { AppError, ErrorCode } from '@touchpoint/errors';
import { decodeCursor, encodeCursor } from '../sql.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe(decodeCursor.name, () => {
  it('reads back what encodeCursor wrote', () => {
    const id = '0ecedf21-1899-4f1b-ac3f-aef2715e4aa9';
    expect(decodeCursor(encodeCursor('2026-01-01T00:00:00.000Z', id))).toEqual({ at: '2026-01-01T00:00:00.000Z', id });
  });

  it.each([
    ['a non-UUID id', b64({ at: '2026-01-01', id: 'x' })],
    ['an array id', b64({ at: '2026-01-01', id: ['a'] })],
    ['a bad date', b64({ at: 'yesterday', id: '0ecedf21-1899-4f1b-ac3f-aef2715e4aa9' })],
    ['garbage', '%%%'],
  ])('refuses %s with invalid_cursor', (_name, cursor) => {
    let caught: unknown;
    try {
      decodeCursor(cursor);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect((caught as AppError).code).toBe(ErrorCode.InvalidCursor);
  });
});
