import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { CommitBatch, createServiceDataSource, quoteIdent, runInTransaction, type Tx } from '@touchpoint/database';
import { TEST_DATABASE_URL } from '@touchpoint/testing';

/**
 * `CommitBatch` on a real transaction (`Tx.beforeCommit`): the items of one transaction are
 * written together right before its commit, in the order added, and commit with it or not at all.
 */
describe(CommitBatch.name, () => {
  const schema = `t_commit_batch_${randomBytes(3).toString('hex')}`;
  let dataSource: DataSource;
  let writes: string[][];
  let sut: CommitBatch<string>;
  const names = async () => (await dataSource.query(`SELECT name FROM ${quoteIdent(schema)}.items ORDER BY id`)).map((r: { name: string }) => r.name);

  beforeAll(async () => {
    dataSource = createServiceDataSource({ url: TEST_DATABASE_URL, schema, entities: [], migrations: [], poolSize: 2 });
    await dataSource.initialize();
    await dataSource.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await dataSource.query(`CREATE TABLE ${quoteIdent(schema)}.items (id bigserial PRIMARY KEY, name text NOT NULL CHECK (name <> 'bad'))`);
  });
  afterAll(async () => {
    await dataSource?.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await dataSource?.destroy();
  });
  beforeEach(async () => {
    await dataSource.query(`TRUNCATE ${quoteIdent(schema)}.items`);
    writes = [];
    sut = new CommitBatch<string>(async (tx: Tx, items) => {
      writes.push(items);
      await tx.query(`INSERT INTO items (name) SELECT * FROM unnest($1::text[])`, [items]);
    });
  });

  it('writes the items of one transaction once, in order, right before the commit', async () => {
    let seenInside: string[] = [];
    await runInTransaction(dataSource, schema, async (tx) => {
      for (const name of ['a', 'b', 'c']) sut.add(tx, name);
      seenInside = (await tx.query<{ name: string }>(`SELECT name FROM items`)).map((r) => r.name);
    });
    expect(seenInside).toEqual([]);
    expect(writes).toEqual([['a', 'b', 'c']]);
    expect(await names()).toEqual(['a', 'b', 'c']);
  });

  it('writes at once on flush, and what is added after goes in a second write before the commit', async () => {
    await runInTransaction(dataSource, schema, async (tx) => {
      sut.add(tx, 'a');
      await sut.flush(tx);
      expect((await tx.query(`SELECT name FROM items`)).length).toBe(1);
      sut.add(tx, 'b');
    });
    expect(writes).toEqual([['a'], ['b']]);
    expect(await names()).toEqual(['a', 'b']);
  });

  it('keeps the items of two transactions apart', async () => {
    await Promise.all(
      ['x', 'y'].map((p) =>
        runInTransaction(dataSource, schema, async (tx) => {
          sut.add(tx, `${p}1`);
          await new Promise((r) => setTimeout(r, 10));
          sut.add(tx, `${p}2`);
        }),
      ),
    );
    expect(writes.map((w) => w.join()).sort()).toEqual(['x1,x2', 'y1,y2']);
  });

  it('rolls the whole transaction back when the write fails, and writes nothing of a rolled-back one', async () => {
    await expect(
      runInTransaction(dataSource, schema, async (tx) => {
        await tx.query(`INSERT INTO items (name) VALUES ('before')`);
        sut.add(tx, 'bad');
      }),
    ).rejects.toThrow();
    await expect(
      runInTransaction(dataSource, schema, async (tx) => {
        sut.add(tx, 'never');
        throw new Error('work failed');
      }),
    ).rejects.toThrow('work failed');
    expect(writes).toEqual([['bad']]);
    expect(await names()).toEqual([]);
  });
});
