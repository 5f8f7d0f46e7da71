import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createServiceDataSource, poolOf, quoteIdent, rowsOf, runInTransaction } from '@touchpoint/database';
import { TEST_DATABASE_URL } from '@touchpoint/testing';

/**
 * `rowsOf` against the real driver: TypeORM's `DataSource.query` answers an UPDATE or DELETE as
 * `[rows, affectedCount]`, the transaction's `Tx.query` as the rows; the helper answers the rows
 * for both, so a repository method runs the same whichever it is given.
 */
describe('rowsOf on PostgreSQL', () => {
  const schema = `t_sql_helper_${randomBytes(3).toString('hex')}`;
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = createServiceDataSource({ url: TEST_DATABASE_URL, schema, entities: [], migrations: [], poolSize: 2 });
    await dataSource.initialize();
    await dataSource.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await dataSource.query(`CREATE TABLE ${quoteIdent(schema)}.items (id int PRIMARY KEY, name text NOT NULL)`);
  });
  afterAll(async () => {
    await dataSource?.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await dataSource?.destroy();
  });
  beforeEach(async () => {
    await dataSource.query(`TRUNCATE items`);
    await dataSource.query(`INSERT INTO items (id, name) VALUES (1, 'a'), (2, 'b')`);
  });

  it('the raw data source answers an UPDATE … RETURNING as [rows, count] (why the helper exists)', async () => {
    expect(await dataSource.query(`UPDATE items SET name = 'z' WHERE id = $1 RETURNING id, name`, [1])).toEqual([[{ id: 1, name: 'z' }], 1]);
  });

  it.each([
    ['the data source', (): Parameters<typeof rowsOf>[0] => dataSource],
    ['poolOf(data source)', (): Parameters<typeof rowsOf>[0] => poolOf(dataSource)],
  ])('answers the rows of SELECT, UPDATE and DELETE … RETURNING through %s', async (_name, db) => {
    expect(await rowsOf(db(), `SELECT id, name FROM items WHERE id >= $1 ORDER BY id`, [1])).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ]);
    expect(await rowsOf(db(), `UPDATE items SET name = 'z' WHERE id = $1 RETURNING id, name`, [2])).toEqual([{ id: 2, name: 'z' }]);
    expect(await rowsOf(db(), `DELETE FROM items WHERE id = $1 RETURNING id`, [1])).toEqual([{ id: 1 }]);
    expect(await rowsOf(db(), `UPDATE items SET name = 'y' WHERE id = $1 RETURNING id`, [99])).toEqual([]);
  });

  it('answers the same rows inside a transaction', async () => {
    const rows = await runInTransaction(dataSource, schema, (tx) => rowsOf<{ id: number }>(tx, `UPDATE items SET name = 'q' WHERE id = ANY($1::int[]) RETURNING id`, [[1, 2]]));
    expect(rows.map((r) => r.id).sort()).toEqual([1, 2]);
  });
});
