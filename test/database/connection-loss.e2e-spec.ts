import type { DataSource } from 'typeorm';
import { createServiceDataSource, runInTransaction } from '@touchpoint/database';
import { createTestWorld, TcpProxy, type TestWorld } from '@touchpoint/testing';

/**
 * A service's database connection dropped while a transaction holds it between two statements:
 * pg emits `error` on the checked-out client, which the pool no longer listens to. Unheard, it
 * crashed outreach on every database cut of the chaos harness (issue 17).
 */
describe('runInTransaction across a lost connection', () => {
  let world: TestWorld;
  let proxy: TcpProxy;
  let sut: DataSource;
  let schema: string;

  beforeAll(async () => {
    world = await createTestWorld('conn_loss');
    const db = new URL(world.databaseUrl);
    proxy = new TcpProxy(db.hostname, Number(db.port || 5432));
    db.host = `127.0.0.1:${await proxy.start()}`;
    schema = world.schema('followups');
    await world.sql(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await world.sql(`CREATE TABLE "${schema}".outbox_events (event_id text PRIMARY KEY, type text, organization_id text, payload jsonb)`);
    await world.sql(`CREATE TABLE "${schema}".loss_probe (n int)`);
    sut = createServiceDataSource({ url: db.toString(), schema, entities: [], migrations: [], poolSize: 2 });
    await sut.initialize();
  });
  afterAll(async () => {
    await sut?.destroy().catch(() => undefined);
    await proxy.stop();
    await world.close();
  });

  it('rejects the transaction (nothing committed) instead of crashing, and the next one runs on a fresh connection', async () => {
    const pool = (sut.driver as unknown as { master: { once(e: 'acquire', fn: (c: { listenerCount(e: string): number }) => void): void } }).master;
    let heard = -1;
    let heardInside = -1;
    pool.once('acquire', (client) => setImmediate(() => (heard = client.listenerCount('error'))));
    const lost = runInTransaction(sut, schema, async (tx) => {
      await tx.query('INSERT INTO loss_probe (n) VALUES (1)');
      heardInside = heard;
      // The link drops while no statement is in flight (the work awaits something else).
      proxy.cut();
      await new Promise((r) => setTimeout(r, 500));
      proxy.restore();
      await tx.query('INSERT INTO loss_probe (n) VALUES (2)');
    });
    await expect(lost).rejects.toThrow();
    // Someone heard this client's errors while the transaction held it.
    expect(heardInside).toBeGreaterThan(0);

    await runInTransaction(sut, schema, (tx) => tx.query('INSERT INTO loss_probe (n) VALUES (3)'));
    expect(await world.sql(`SELECT n FROM "${schema}".loss_probe ORDER BY n`)).toEqual([{ n: 3 }]);
  });
});
