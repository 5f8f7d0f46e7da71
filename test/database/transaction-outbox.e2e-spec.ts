import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { OutgoingMessage } from '@touchpoint/contracts';
import { CommitBatch, createServiceDataSource, quoteIdent, runInTransaction } from '@touchpoint/database';
import { TEST_DATABASE_URL } from '@touchpoint/testing';

/**
 * `Tx.publish` on a real transaction (DESIGN §2): the messages of one transaction go into
 * `outbox_events` in one statement right before the commit, in the order given, and only those
 * that the transaction keeps: none after a rollback, none given inside a savepoint rolled back to.
 */
describe('runInTransaction publish', () => {
  const schema = `t_tx_outbox_${randomBytes(3).toString('hex')}`;
  let dataSource: DataSource;
  const event = (id: string): OutgoingMessage => ({ event_id: id, type: 'platform.probe.recorded', organization_id: 'org-1', data: { probe_id: id } }) as unknown as OutgoingMessage;
  const rows = async () => (await dataSource.query(`SELECT event_id FROM ${quoteIdent(schema)}.outbox_events ORDER BY id`)).map((r: { event_id: string }) => r.event_id);
  /** Runs `work`, recording the statements it sent (BEGIN and COMMIT included). */
  const recorded = async (work: Parameters<typeof runInTransaction>[2]): Promise<string[]> => {
    const pool = (dataSource.driver as unknown as { master: { on(e: string, f: (c: { query: (...a: unknown[]) => unknown }) => void): void; removeAllListeners(e: string): void } }).master;
    const statements: string[] = [];
    const seen = new WeakSet<object>();
    pool.on('acquire', (client) => {
      if (seen.has(client)) return;
      seen.add(client);
      const query = client.query.bind(client);
      client.query = (...args: unknown[]) => {
        statements.push(
          String(typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text)
            .replace(/\s+/g, ' ')
            .trim(),
        );
        return query(...args);
      };
    });
    try {
      await runInTransaction(dataSource, schema, work);
    } finally {
      pool.removeAllListeners('acquire');
    }
    return statements;
  };

  beforeAll(async () => {
    dataSource = createServiceDataSource({ url: TEST_DATABASE_URL, schema, entities: [], migrations: [], poolSize: 1 });
    await dataSource.initialize();
    await dataSource.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await dataSource.query(
      `CREATE TABLE ${quoteIdent(schema)}.outbox_events (id bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE, type text NOT NULL, organization_id text NULL, payload jsonb NOT NULL,
         created_at timestamptz NOT NULL DEFAULT clock_timestamp(), published_at timestamptz NULL, publish_attempts integer NOT NULL DEFAULT 0)`,
    );
    await dataSource.query(`CREATE TABLE ${quoteIdent(schema)}.items (name text NOT NULL)`);
  });
  afterAll(async () => {
    await dataSource?.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await dataSource?.destroy();
  });
  beforeEach(() => dataSource.query(`TRUNCATE ${quoteIdent(schema)}.outbox_events, ${quoteIdent(schema)}.items`));

  it('writes every publish of a transaction in one insert right before the commit, in call order, an id given twice once', async () => {
    const statements = await recorded(async (tx) => {
      await tx.publish(event('a'));
      await tx.query(`INSERT INTO items (name) VALUES ('x')`);
      await tx.publish([event('b'), event('c')]);
      await tx.publish(event('a'));
    });
    const inserts = statements.filter((s) => s.startsWith('INSERT INTO outbox_events'));
    expect(inserts).toHaveLength(1);
    expect(statements.indexOf(inserts[0])).toBe(statements.indexOf('COMMIT') - 1);
    expect(await rows()).toEqual(['a', 'b', 'c']);
  });

  it('writes a message as it was when published, whatever its caller changes in it before the commit', async () => {
    const message = event('changed-later') as OutgoingMessage & { data: { probe_id: string } };
    await runInTransaction(dataSource, schema, async (tx) => {
      await tx.publish(message);
      message.data.probe_id = 'changed';
    });
    const [row] = await dataSource.query(`SELECT payload FROM ${quoteIdent(schema)}.outbox_events`);
    expect(row.payload.data).toEqual({ probe_id: 'changed-later' });
  });

  it('skips an event id the outbox holds already', async () => {
    await runInTransaction(dataSource, schema, (tx) => tx.publish(event('a')));
    await runInTransaction(dataSource, schema, (tx) => tx.publish([event('a'), event('b')]));
    expect(await rows()).toEqual(['a', 'b']);
  });

  it('writes nothing of a transaction that fails', async () => {
    await expect(
      runInTransaction(dataSource, schema, async (tx) => {
        await tx.publish(event('never'));
        throw new Error('work failed');
      }),
    ).rejects.toThrow('work failed');
    expect(await rows()).toEqual([]);
  });

  const names = async () => (await dataSource.query(`SELECT name FROM ${quoteIdent(schema)}.items ORDER BY name`)).map((r: { name: string }) => r.name);
  const fail = (message: string) => {
    throw new Error(message);
  };

  it('tx.savepoint: drops what was published and written inside a savepoint that failed, nested ones too, and keeps what a savepoint that succeeded published', async () => {
    await runInTransaction(dataSource, schema, async (tx) => {
      await tx.publish(event('before'));
      await expect(
        tx.savepoint(async () => {
          await tx.publish(event('rolled-back'));
          await tx.query(`INSERT INTO items (name) VALUES ('rolled-back')`);
          // An inner savepoint that succeeded is still undone with the outer one.
          await tx.savepoint(() => tx.publish(event('released-inner-of-rolled-back')));
          fail('row one failed');
        }),
      ).rejects.toThrow('row one failed');
      const kept = await tx.savepoint(async () => {
        await tx.publish(event('released'));
        await tx.query(`INSERT INTO items (name) VALUES ('released')`);
        // A failed inner savepoint: only its own part goes, and the outer one goes on.
        await expect(tx.savepoint(async () => (await tx.publish(event('rolled-back-inner')), fail('inner')))).rejects.toThrow('inner');
        await tx.publish(event('after-inner'));
        return 'value';
      });
      expect(kept).toBe('value');
      await tx.publish(event('after'));
    });
    expect(await rows()).toEqual(['before', 'released', 'after-inner', 'after']);
    expect(await names()).toEqual(['released']);
  });

  it('tx.savepoint: a statement that fails inside it leaves the transaction usable, and its savepoint names do not collide', async () => {
    const statements = await recorded(async (tx) => {
      for (const name of ['one', 'two']) {
        await expect(tx.savepoint(() => tx.query(`INSERT INTO items (name) VALUES (NULL)`))).rejects.toThrow(/null value/);
        await tx.savepoint(() => tx.query(`INSERT INTO items (name) VALUES ($1)`, [name]));
      }
    });
    expect(await names()).toEqual(['one', 'two']);
    expect(statements.filter((s) => s.startsWith('SAVEPOINT'))).toEqual(['SAVEPOINT tp_savepoint_0', 'SAVEPOINT tp_savepoint_0', 'SAVEPOINT tp_savepoint_0', 'SAVEPOINT tp_savepoint_0']);
  });

  it('CommitBatch drops the items added inside a savepoint that failed and writes the rest before the commit', async () => {
    const batch = new CommitBatch<string>((tx, items) => tx.query(`INSERT INTO items (name) SELECT unnest($1::text[])`, [items]).then(() => undefined));
    await runInTransaction(dataSource, schema, async (tx) => {
      batch.add(tx, 'a');
      await expect(
        tx.savepoint(async () => {
          batch.add(tx, 'dropped');
          fail('no');
        }),
      ).rejects.toThrow('no');
      await tx.savepoint(async () => batch.add(tx, 'b'));
      // Flushed inside a savepoint that then fails: PostgreSQL undoes the insert itself.
      await expect(
        tx.savepoint(async () => {
          batch.add(tx, 'flushed-then-undone');
          await batch.flush(tx);
          fail('late');
        }),
      ).rejects.toThrow('late');
      batch.add(tx, 'c');
    });
    expect(await names()).toEqual(['a', 'b', 'c']);
  });

  it('runs the atCommit callbacks after the beforeCommit ones and the outbox insert, right before COMMIT, and refuses a publish from them', async () => {
    const order: string[] = [];
    let refused: unknown;
    const statements = await recorded(async (tx) => {
      tx.atCommit(async () => {
        order.push('at');
        await tx.query(`INSERT INTO items (name) VALUES ('at-commit')`);
        refused = await tx.publish(event('too-late')).catch((err: Error) => err.message);
      });
      tx.beforeCommit(async () => void order.push('before'));
      await tx.publish(event('a'));
    });
    expect(order).toEqual(['before', 'at']);
    expect(refused).toMatch(/publish after the outbox was written/);
    const at = statements.findIndex((s) => s.includes(`'at-commit'`));
    expect(statements[at - 1]).toMatch(/^INSERT INTO outbox_events/);
    expect(statements[at + 1]).toBe('COMMIT');
    expect(await rows()).toEqual(['a']);
  });
});
