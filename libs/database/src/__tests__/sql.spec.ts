import { AppError, ErrorCode } from '@touchpoint/errors';
import type { DataSource } from 'typeorm';
import { isUniqueViolation, iso, poolOf, rowFromJson, rowsOf } from '../sql.js';
import { invalidField, isUuid, notFound, requireId, requireString } from '../request-errors.js';

/** A Queryable that answers `result` whatever it is asked, and records what it was asked. */
const answering = (result: unknown) => {
  const asked: [string, unknown[] | undefined][] = [];
  return { asked, db: { query: async (sql: string, params?: unknown[]) => (asked.push([sql, params]), result) as never } };
};

describe('rowsOf', () => {
  it('answers the rows of a statement that answers rows (SELECT, INSERT, and every Tx statement)', async () => {
    const { db, asked } = answering([{ id: 1 }, { id: 2 }]);
    expect(await rowsOf(db, 'SELECT id FROM t WHERE a = $1', ['x'])).toEqual([{ id: 1 }, { id: 2 }]);
    expect(asked).toEqual([['SELECT id FROM t WHERE a = $1', ['x']]]);
  });

  it("unwraps TypeORM's [rows, affectedCount] answer to an UPDATE or DELETE … RETURNING", async () => {
    expect(await rowsOf(answering([[{ id: 'a' }], 1]).db, 'UPDATE t SET a = 1 RETURNING id')).toEqual([{ id: 'a' }]);
    expect(await rowsOf(answering([[], 0]).db, 'DELETE FROM t')).toEqual([]);
  });

  it('passes no parameters as an empty list', async () => {
    const { db, asked } = answering([]);
    await rowsOf(db, 'SELECT 1');
    expect(asked[0]![1]).toEqual([]);
  });

  it('keeps two rows whose second is a number-like row (not mistaken for [rows, count])', async () => {
    expect(await rowsOf(answering([{ n: 1 }, { n: 2 }]).db, 'SELECT n')).toEqual([{ n: 1 }, { n: 2 }]);
  });
});

describe('poolOf', () => {
  it("answers rows like a transaction does, also for TypeORM's [rows, count]", async () => {
    const dataSource = { query: async () => [[{ id: 'a' }], 1] } as unknown as DataSource;
    expect(await poolOf(dataSource).query('UPDATE t SET a = 1 RETURNING id')).toEqual([{ id: 'a' }]);
  });

  it("sends the statement to the data source's pg pool, not through TypeORM, and answers its rows", async () => {
    const asked: [string, unknown[] | undefined][] = [];
    const dataSource = {
      driver: { master: { query: async (sql: string, params?: unknown[]) => (asked.push([sql, params]), { rows: [{ id: 'a' }], rowCount: 1 }) } },
      query: async () => {
        throw new Error('TypeORM was asked');
      },
    } as unknown as DataSource;
    expect(await poolOf(dataSource).query('UPDATE t SET a = $1 RETURNING id', [1])).toEqual([{ id: 'a' }]);
    expect(asked).toEqual([['UPDATE t SET a = $1 RETURNING id', [1]]]);
  });

  it('answers the rows of the last statement when several were sent in one string', async () => {
    const dataSource = { driver: { master: { query: async () => [{ rows: [] }, { rows: [{ n: 2 }] }] } } } as unknown as DataSource;
    expect(await poolOf(dataSource).query('SET LOCAL a = 1; SELECT 2 AS n')).toEqual([{ n: 2 }]);
  });
});

describe('iso', () => {
  it.each([
    [new Date('2026-03-29T01:30:00.123Z'), '2026-03-29T01:30:00.123Z'],
    ['2026-03-29 01:30:00+00', '2026-03-29T01:30:00.000Z'],
    [null, null],
    [undefined, null],
  ])('answers %p as %p', (value, expected) => {
    expect(iso(value)).toBe(expected);
  });
});

describe('isUniqueViolation', () => {
  it.each([
    ['pg error', { code: '23505', constraint: 'c' }, undefined, true],
    ['QueryFailedError around one', { driverError: { code: '23505', constraint: 'c' } }, undefined, true],
    ['of the named constraint', { code: '23505', constraint: 'c' }, 'c', true],
    ['of another constraint', { code: '23505', constraint: 'other' }, 'c', false],
    ['a foreign key violation', { code: '23503' }, undefined, false],
    ['not an error', undefined, undefined, false],
  ])('%s → %p', (_name, err, constraint, expected) => {
    expect(isUniqueViolation(err, constraint)).toBe(expected);
  });
});

describe('request errors', () => {
  const id = '0ecedf21-1899-4f1b-ac3f-aef2715e4aa9';

  it('notFound says what was not found, nothing more', () => {
    expect(notFound('campaign')).toMatchObject({ code: ErrorCode.NotFound, message: 'campaign not found', details: undefined });
  });

  it('invalidField names the field in the validation pipe shape', () => {
    expect(invalidField('role', 'must be admin or member')).toMatchObject({ code: ErrorCode.ValidationFailed, details: [{ field: 'role', problems: ['must be admin or member'] }] });
  });

  it('requireId answers a uuid and turns anything else into not_found', () => {
    expect(requireId(id, 'contact')).toBe(id);
    expect(isUuid(id.toUpperCase())).toBe(true);
    for (const bad of ['x', `${id}0`, 42, null, undefined]) expect(() => requireId(bad, 'contact')).toThrow(expect.objectContaining({ code: ErrorCode.NotFound, message: 'contact not found' }));
  });

  it('requireString answers a non-blank string and names the field otherwise', () => {
    expect(requireString('k', 'key')).toBe('k');
    for (const bad of ['', '  ', 3, null]) {
      let caught: unknown;
      try {
        requireString(bad, 'key');
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(AppError);
      expect(caught).toMatchObject({ code: ErrorCode.ValidationFailed, details: { field: 'key' } });
    }
  });
});

describe('requireString with a length cap', () => {
  it('answers a string of at most maxChars code points and refuses a longer one naming the field', () => {
    expect(requireString('😀'.repeat(200), 'organization_id', 200)).toHaveLength(400);
    expect(() => requireString('😀'.repeat(201), 'organization_id', 200)).toThrow(expect.objectContaining({ code: ErrorCode.ValidationFailed, details: { field: 'organization_id' } }));
    expect(requireString('x'.repeat(5000), 'key')).toHaveLength(5000);
  });
});

describe('rowFromJson', () => {
  it('turns the named timestamp columns of a to_jsonb row back to Dates, keeps nulls and every other column', () => {
    const row = rowFromJson<{ id: string; created_at: Date; erased_at: Date | null; tags: string[] }>({ id: 'c1', created_at: '2026-12-03T14:00:00.123+00:00', erased_at: null, tags: ['a'] }, ['created_at', 'erased_at']);
    expect(row).toEqual({ id: 'c1', created_at: new Date('2026-12-03T14:00:00.123Z'), erased_at: null, tags: ['a'] });
    expect(row!.created_at).toBeInstanceOf(Date);
  });

  it('answers null for no row', () => {
    expect(rowFromJson(null, [])).toBeNull();
  });
});
