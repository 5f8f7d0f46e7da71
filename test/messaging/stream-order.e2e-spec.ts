import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import type { MessagingStreamItem } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { StreamController } from '../../apps/messaging/src/stream/stream.controller.js';
import { StreamRepository } from '../../apps/messaging/src/stream/stream.repository.js';

/**
 * The live feed's ids follow commit order within an organization (`StreamRepository`), so a reader
 * that follows them with `id > cursor` (the SSE route, `GET /events/stream`) never passes an item by:
 * an item of a transaction that commits late is read after the ones that committed before it.
 */
describe('live feed order', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let uow: UnitOfWork;
  let stream: StreamRepository;
  let reader: StreamController;

  beforeAll(async () => {
    world = await createTestWorld('stream_order');
    app = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', OUTCOME_SWEEP_INTERVAL_MS: '0' })));
    uow = app.get(UnitOfWork);
    stream = app.get(StreamRepository);
    reader = app.get(StreamController);
  });
  afterAll(() => world.close());

  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { open, opened };
  };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** A reader of `org`'s feed as the SSE route is: from the newest id, then page after page by cursor. */
  const follow = async (org: string) => {
    let cursor = (await reader.read({ organization_id: org, after: null })).cursor;
    const seen: MessagingStreamItem[] = [];
    return {
      seen,
      read: async () => {
        for (;;) {
          const page = await reader.read({ organization_id: org, after: cursor, limit: 50 });
          seen.push(...page.items);
          cursor = page.cursor;
          if (page.items.length < 50) return;
        }
      },
    };
  };
  const append = (org: string, name: string, hold?: Promise<void>) =>
    uow.run(async (tx) => {
      await stream.append(tx, org, 'messaging.probe', { name });
      // Registered after the append, it still runs before the feed insert (the commit's round trip).
      if (hold) tx.beforeCommit(() => hold);
    });
  const names = (items: MessagingStreamItem[]) => items.map((i) => (i.data as { name: string }).name);

  it('reads an item whose transaction commits after a later transaction of the organization committed and was read', async () => {
    const org = `org-${randomUUID()}`;
    const feed = await follow(org);
    const slow = gate();
    const first = append(org, 'slow', slow.opened);
    await sleep(100);
    await append(org, 'quick');
    await feed.read();
    slow.open();
    await first;
    await feed.read();
    expect(names(feed.seen)).toEqual(['quick', 'slow']);
  });

  it('holds the next transaction of the organization while one commits its items, and not another organization', async () => {
    const [org, other] = [`org-${randomUUID()}`, `org-${randomUUID()}`];
    const feed = await follow(org);
    const held = gate();
    // A transaction caught between its feed insert and its commit (a slow commit's WAL flush): the
    // organization's feed lock taken, its item inserted, not committed until the gate opens.
    const holder = new pg.Client({ connectionString: world.databaseUrl });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT pg_advisory_xact_lock(hashtext('stream_events:' || $1))`, [org]);
    await holder.query(`INSERT INTO "${world.schema('messaging')}".stream_events (organization_id, type, data) VALUES ($1, 'messaging.probe', '{"name":"first"}')`, [org]);
    const first = held.opened.then(() => holder.query('COMMIT')).finally(() => holder.end());
    await sleep(100);
    let secondDone = false;
    const second = append(org, 'second').then(() => (secondDone = true));
    // Another organization's feed does not wait for this one's lock.
    await append(other, 'elsewhere');
    await sleep(200);
    expect(secondDone).toBe(false);
    held.open();
    await Promise.all([first, second]);
    await feed.read();
    expect(names(feed.seen)).toEqual(['first', 'second']);
    expect(BigInt(feed.seen[0].id) < BigInt(feed.seen[1].id)).toBe(true);
  });

  it('hands a reader that follows along every item once, in increasing ids, while many transactions of two organizations commit in any order', async () => {
    const orgs = [`org-${randomUUID()}`, `org-${randomUUID()}`];
    const feeds = await Promise.all(orgs.map(follow));
    const written = new Map(orgs.map((o) => [o, [] as string[]]));
    let writing = true;
    const readers = feeds.map(async (feed) => {
      while (writing) {
        await feed.read();
        await sleep(3);
      }
    });
    await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const org = orgs[i % 2];
        await sleep(Math.random() * 40);
        await uow.run(async (tx) => {
          for (let k = 0; k < 1 + (i % 3); k++) await stream.append(tx, org, 'messaging.probe', { name: `${i}.${k}` });
          // A commit that lingers after its items were appended, as a busy consumer batch does.
          tx.beforeCommit(async () => void (await sleep(Math.random() * 30)));
        });
        written.get(org)!.push(...Array.from({ length: 1 + (i % 3) }, (_, k) => `${i}.${k}`));
      }),
    );
    writing = false;
    await Promise.all(readers);
    for (const [i, feed] of feeds.entries()) {
      await feed.read();
      const got = names(feed.seen);
      expect(new Set(got).size).toBe(got.length);
      expect([...got].sort()).toEqual([...written.get(orgs[i])!].sort());
      const ids = feed.seen.map((s) => BigInt(s.id));
      expect(ids.every((id, k) => k === 0 || id > ids[k - 1])).toBe(true);
    }
  });
});
