import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { OutgoingMessage } from '@touchpoint/contracts';
import { createServiceDataSource, quoteIdent, runInTransaction } from '@touchpoint/database';
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

  it('drops what was published inside a savepoint rolled back to, and keeps what a released one published', async () => {
    await runInTransaction(dataSource, schema, async (tx) => {
      await tx.publish(event('before'));
      await tx.query('SAVEPOINT row_one');
      await tx.publish(event('rolled-back'));
      await tx.query('SAVEPOINT inner_one');
      await tx.publish(event('rolled-back-inner'));
      await tx.query('ROLLBACK TO SAVEPOINT row_one');
      // Still set after ROLLBACK TO: a second round inside it, then released.
      await tx.publish(event('kept-after-rollback'));
      await tx.query('RELEASE SAVEPOINT row_one');
      await tx.query('SAVEPOINT row_two');
      await tx.publish(event('released'));
      await tx.query('RELEASE SAVEPOINT row_two');
      await tx.publish(event('after'));
    });
    expect(await rows()).toEqual(['before', 'kept-after-rollback', 'released', 'after']);
  });
});
