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
  const recorded = async (work: Parameters<typeof runInTransaction>[2]): Promise<string[]> => (await roundTrips(work)).flat();
  /** Runs `work`, recording each round trip it made: the statements that went together. */
  const roundTrips = async (work: Parameters<typeof runInTransaction>[2], options: Parameters<typeof runInTransaction>[3] = {}): Promise<string[][]> => {
    const pool = (dataSource.driver as unknown as { master: { on(e: string, f: (c: { query: (...a: unknown[]) => unknown }) => void): void; removeAllListeners(e: string): void } }).master;
    const statements: string[][] = [];
    const seen = new WeakSet<object>();
    pool.on('acquire', (client) => {
      if (seen.has(client)) return;
      seen.add(client);
      const query = client.query.bind(client);
      client.query = (...args: unknown[]) => {
        // A folded round trip (`PreparingClient.queryFolded`) carries its statements as steps; a
        // first statement without parameters goes after BEGIN in one simple-protocol string.
        const texts = typeof args[0] === 'string' ? (/^BEGIN/.test(args[0]) ? args[0].split(/;\s+/) : [args[0]]) : ((args[0] as { steps?: { sql: string }[] }).steps?.map((s) => s.sql) ?? [(args[0] as { text: string }).text]);
        statements.push(texts.map((t) => t.replace(/\s+/g, ' ').trim()));
        return query(...args);
      };
    });
    try {
      await runInTransaction(dataSource, schema, work, options);
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

  it('runs the atCommit callbacks after the beforeCommit ones, the statement one answers after the outbox insert in the round trip of COMMIT, and refuses a publish from them', async () => {
    const order: string[] = [];
    let refused: unknown;
    const trips = await roundTrips(async (tx) => {
      tx.atCommit(async () => {
        order.push('at');
        await tx.query(`INSERT INTO items (name) VALUES ('at-commit-direct')`);
        refused = await tx.publish(event('too-late')).catch((err: Error) => err.message);
        return { sql: `INSERT INTO items (name) VALUES ($1)`, params: ['at-commit'] };
      });
      tx.beforeCommit(async () => void order.push('before'));
      await tx.publish(event('a'));
    });
    expect(order).toEqual(['before', 'at']);
    expect(refused).toMatch(/publish after the outbox was written/);
    // The callback's own statement opens the transaction; the last round trip is outbox, answered statement, COMMIT.
    expect(trips).toEqual([
      ['BEGIN', `INSERT INTO items (name) VALUES ('at-commit-direct')`],
      [expect.stringMatching(/^INSERT INTO outbox_events/), 'INSERT INTO items (name) VALUES ($1)', 'COMMIT'],
    ]);
    expect(await rows()).toEqual(['a']);
    expect(await names()).toEqual(['at-commit', 'at-commit-direct']);
  });
});

/**
 * A transaction's round trips (`runInTransaction` on `PreparingClient.queryFolded`): BEGIN goes with
 * the first statement, and the outbox rows, the atCommit statements and COMMIT go together; a
 * failure anywhere still rolls everything back and leaves the connection clean.
 */
describe('runInTransaction round trips', () => {
  const schema = `t_tx_trips_${randomBytes(3).toString('hex')}`;
  let dataSource: DataSource;
  const table = () => `${quoteIdent(schema)}.items`;
  const event = (id: string): OutgoingMessage => ({ event_id: id, type: 'platform.probe.recorded', organization_id: 'org-1', data: { probe_id: id } }) as unknown as OutgoingMessage;
  /** Each round trip the client made while `work` ran: the statements that went together. */
  const trips = async <T>(work: () => Promise<T>): Promise<{ result: T; trips: string[][] }> => {
    const pool = (dataSource.driver as unknown as { master: { on(e: string, f: (c: { query: (...a: unknown[]) => unknown }) => void): void; removeAllListeners(e: string): void } }).master;
    const seen: string[][] = [];
    pool.on('acquire', (client) => {
      const query = client.query.bind(client);
      client.query = (...args: unknown[]) => {
        const a = args[0] as string | { steps?: { sql: string }[]; text: string };
        seen.push(typeof a === 'string' ? [a] : (a.steps?.map((s) => s.sql) ?? [a.text]));
        return query(...args);
      };
    });
    try {
      return { result: await work(), trips: seen };
    } finally {
      pool.removeAllListeners('acquire');
    }
  };
  const names = async () => (await dataSource.query(`SELECT name FROM ${table()} ORDER BY name`)).map((r: { name: string }) => r.name);
  const events = async () => (await dataSource.query(`SELECT event_id FROM ${quoteIdent(schema)}.outbox_events ORDER BY id`)).map((r: { event_id: string }) => r.event_id);

  beforeAll(async () => {
    // One connection: every transaction below runs on the same one, after whatever the last left behind.
    dataSource = createServiceDataSource({ url: TEST_DATABASE_URL, schema, entities: [], migrations: [], poolSize: 1 });
    await dataSource.initialize();
    await dataSource.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await dataSource.query(
      `CREATE TABLE ${quoteIdent(schema)}.outbox_events (id bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE, type text NOT NULL, organization_id text NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT clock_timestamp(), published_at timestamptz NULL, publish_attempts integer NOT NULL DEFAULT 0)`,
    );
    await dataSource.query(`CREATE TABLE ${table()} (name text NOT NULL)`);
  });
  afterAll(async () => {
    await dataSource?.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await dataSource?.destroy();
  });
  beforeEach(() => dataSource.query(`TRUNCATE ${quoteIdent(schema)}.outbox_events, ${table()}`));

  it('takes three round trips for two statements and a publish (six before folding), and none for a transaction that sends nothing', async () => {
    const { trips: busy } = await trips(() =>
      runInTransaction(dataSource, schema, async (tx) => {
        await tx.query(`INSERT INTO items (name) VALUES ($1)`, ['one']);
        await tx.query(`INSERT INTO items (name) VALUES ($1)`, ['two']);
        await tx.publish(event('e1'));
      }),
    );
    expect(busy.map((t) => t.length)).toEqual([2, 1, 2]);
    expect(busy[0]![0]).toBe('BEGIN');
    expect(busy[2]!.at(-1)).toBe('COMMIT');
    expect(await names()).toEqual(['one', 'two']);
    expect(await events()).toEqual(['e1']);

    const { trips: idle, result } = await trips(() => runInTransaction(dataSource, schema, async () => 'nothing to do'));
    expect(result).toBe('nothing to do');
    expect(idle).toEqual([]);
    // Only a publish: BEGIN, the outbox insert and COMMIT in one round trip.
    const { trips: publishing } = await trips(() => runInTransaction(dataSource, schema, (tx) => tx.publish(event('e2'))));
    expect(publishing).toHaveLength(1);
    expect(publishing[0]![0]).toBe('BEGIN');
    expect(await events()).toEqual(['e1', 'e2']);
  });

  it('applies the isolation level and the lock timeout to the first statement, sent in its round trip', async () => {
    const { result, trips: sent } = await trips(() =>
      runInTransaction(dataSource, schema, async (tx) => [await tx.query<{ transaction_isolation: string }>(`SELECT current_setting($1) AS transaction_isolation`, ['transaction_isolation']), await tx.query<{ lock_timeout: string }>(`SHOW lock_timeout`)], {
        isolation: 'SERIALIZABLE',
        lockTimeoutMs: 250,
      }),
    );
    expect(result[0]).toEqual([{ transaction_isolation: 'serializable' }]);
    expect(result[1]).toEqual([{ lock_timeout: '250ms' }]);
    expect(sent[0]).toEqual(['BEGIN ISOLATION LEVEL SERIALIZABLE', 'SET LOCAL lock_timeout = 250', 'SELECT current_setting($1) AS transaction_isolation']);
  });

  it('rolls back a transaction whose first statement fails (folded with BEGIN), with its error, and the connection serves the next one', async () => {
    const failing = runInTransaction(dataSource, schema, async (tx) => {
      await tx.query(`INSERT INTO items (name) VALUES ($1)`, [null]);
    });
    await expect(failing).rejects.toMatchObject({ code: '23502' });
    await runInTransaction(dataSource, schema, (tx) => tx.query(`INSERT INTO items (name) VALUES ($1)`, ['after']));
    expect(await names()).toEqual(['after']);
    // Not left inside a transaction: an autocommitted read sees no open transaction block.
    expect(await dataSource.query(`SELECT now() = statement_timestamp() AS autocommit`)).toEqual([{ autocommit: true }]);
  });

  it('rolls everything back when a step of the commit round trip fails: the COMMIT after it does not run', async () => {
    const failing = runInTransaction(dataSource, schema, async (tx) => {
      await tx.query(`INSERT INTO items (name) VALUES ($1)`, ['business row']);
      await tx.publish(event('never'));
      tx.atCommit(async () => ({ sql: `INSERT INTO items (name) VALUES ($1)`, params: [null] }));
    });
    await expect(failing).rejects.toMatchObject({ code: '23502' });
    expect(await names()).toEqual([]);
    expect(await events()).toEqual([]);
    await runInTransaction(dataSource, schema, async (tx) => {
      await tx.query(`INSERT INTO items (name) VALUES ($1)`, ['next']);
      await tx.publish(event('next'));
    });
    expect(await names()).toEqual(['next']);
    expect(await events()).toEqual(['next']);
  });

  it('prepares a statement whose first use was in a failed round trip again, or not, as the server kept it', async () => {
    const tag = randomBytes(4).toString('hex');
    // Parsed (by name) in a round trip that then fails at the next step: the server keeps it prepared.
    const kept = `INSERT INTO items (name) SELECT $1::text || '${tag}-kept'`;
    await expect(
      runInTransaction(dataSource, schema, async (tx) => {
        await tx.publish(event(`kept-${tag}`));
        tx.atCommit(async () => ({ sql: kept, params: ['a-'] }));
        tx.atCommit(async () => ({ sql: `INSERT INTO items (name) VALUES ($1)`, params: [null] }));
      }),
    ).rejects.toMatchObject({ code: '23502' });
    // Failing to parse: nothing kept under its name.
    const broken = `INSERT INTO items (name) SELECT $1::text || '${tag}' FROM no_such_table_${tag}`;
    await expect(runInTransaction(dataSource, schema, (tx) => tx.query(broken, ['x']))).rejects.toMatchObject({ code: '42P01' });
    await dataSource.query(`CREATE TABLE ${quoteIdent(schema)}.no_such_table_${tag} (x int)`);
    await dataSource.query(`INSERT INTO ${quoteIdent(schema)}.no_such_table_${tag} VALUES (1)`);
    // Both run now on the same connection: neither "does not exist" nor "already exists".
    await runInTransaction(dataSource, schema, async (tx) => {
      await tx.query(kept, ['b-']);
      await tx.query(broken, ['y']);
    });
    expect(await names()).toEqual([`b-${tag}-kept`, `y${tag}`]);
  });
});
