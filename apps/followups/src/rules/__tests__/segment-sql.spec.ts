import { compileSegment } from '../segment-sql.js';

describe(compileSegment.name, () => {
  it('compiles rules to SQL with every value as a parameter', () => {
    const params: unknown[] = [];
    const sql = compileSegment(
      {
        match: 'all',
        rules: [
          { field: 'contact.tags', op: 'contains', value: 'vip' },
          { field: 'contact.email', op: 'contains', value: "50%_off'" },
          { field: 'contact.fields.score', op: 'gte', value: 10 },
        ],
      },
      params,
    );
    expect(sql).toBe("($1 = ANY(c.tags)) AND (c.email ILIKE $2) AND (CASE WHEN (c.fields ->> $3) ~ '^-?[0-9]+(\\.[0-9]+)?$' THEN (c.fields ->> $3)::numeric >= $4 ELSE false END)");
    expect(params).toEqual(['vip', "%50\\%\\_off'%", 'score', 10]);
  });

  it('joins with OR for match any, and true for no rules', () => {
    const params: unknown[] = ['x'];
    expect(
      compileSegment(
        {
          match: 'any',
          rules: [
            { field: 'contact.tags', op: 'in', value: ['a', 'b'] },
            { field: 'contact.name', op: 'exists' },
          ],
        },
        params,
      ),
    ).toBe("(c.tags && $2::text[]) OR (coalesce(c.name, '') <> '')");
    expect(compileSegment({ match: 'all', rules: [] }, [])).toBe('true');
  });

  it.each([
    [{ field: 'contact.tags', op: 'gt', value: 1 }, /not supported/],
    [{ field: 'contact.name', op: 'gt', value: 1 }, /not supported/],
    [{ field: 'vars.x', op: 'eq', value: 1 }, /unknown field/],
    [{ field: 'contact.fields.a-b', op: 'eq', value: 1 }, /unknown field/],
  ])('refuses %j', (rule, error) => {
    expect(() => compileSegment({ match: 'all', rules: [rule] }, [])).toThrow(error);
  });
});
