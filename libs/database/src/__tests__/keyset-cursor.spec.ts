import { randomUUID } from 'node:crypto';
import { decodeCursor, encodeCursor } from '../keyset-cursor.js';

const b64 = (json: string) => Buffer.from(json, 'utf8').toString('base64url');

describe('decodeCursor', () => {
  const filters = { organization_id: 'org-1', status: 'active' };

  it('reads back what encodeCursor wrote for the same filters', () => {
    const position = { createdAt: '2026-11-30T10:00:00.000123Z', id: randomUUID() };
    expect(decodeCursor(encodeCursor(position, filters), filters)).toMatchObject(position);
  });

  it.each([
    ['JSON null', b64('null')],
    ['a number', b64('42')],
    ['a string', b64('"x"')],
    ['an array', b64('[1,2]')],
    ['an empty object', b64('{}')],
    ['not base64url', 'a b'],
    ['not JSON', b64('{oops')],
  ])('answers invalid_cursor (never a crash) for %s', (_name, cursor) => {
    expect(() => decodeCursor(cursor, filters)).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });

  it('refuses a cursor issued for other filters', () => {
    const cursor = encodeCursor({ createdAt: '2026-11-30T10:00:00.000123Z', id: randomUUID() }, filters);
    expect(() => decodeCursor(cursor, { ...filters, status: 'completed' })).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });
});
