import { randomUUID } from 'node:crypto';
import { type BusMessage, type OutboxCancelData, OutboxCommands, type OutboxEnqueueData, OutboxEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { UnitOfWork } from '@touchpoint/runtime';
import { aWhatsAppNumber, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { jest } from '@jest/globals';
import { Metrics } from '@touchpoint/observability';
import { EnqueueConsumer } from '../../apps/outbox-dispatcher/src/enqueue/enqueue.consumer.js';
import { EnqueueService } from '../../apps/outbox-dispatcher/src/enqueue/enqueue.service.js';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

/**
 * A consumer batch of `outbox.enqueue` commands (DESIGN §2: several messages of one type in one
 * transaction, the `BeforeBusBatch` preparer first): five statements for the batch, then one per
 * entry written, with the rules of a command handled alone — enqueue before wire and one entry per
 * key (seed 004 "Enqueue before wire"), a cancel that came first wins (DESIGN §5.3), a bad command
 * rejected alone with `outbox.entry.failed`.
 */
describe('EnqueueConsumer', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let uow: UnitOfWork;
  let sut: EnqueueConsumer;
  let org: string;
  let otherOrg: string;
  let senderId: string;
  let otherSenderId: string;
  let disconnectedId: string;
  let seq = 0;

  const table = (name: string) => `"${world.schema('outbox-dispatcher')}".${name}`;
  const newNumber = () => `55119${String(60000000 + ++seq * 7919).slice(-8)}`;
  const command = (data: OutboxEnqueueData): BusMessage<OutboxEnqueueData> => ({ event_id: `cmd:${randomUUID()}`, type: OutboxCommands.Enqueue, organization_id: data.organization_id, occurred_at: new Date().toISOString(), data });
  const cancelCommand = (data: OutboxCancelData): BusMessage<OutboxCancelData> => ({ event_id: `cancel:${randomUUID()}`, type: OutboxCommands.Cancel, organization_id: data.organization_id, occurred_at: new Date().toISOString(), data });
  const entriesOf = async (...keys: string[]) =>
    world.sql<{ id: string; idempotency_key: string; organization_id: string; sender_id: string; pair_id: string; status: string; payload: { body?: string }; next_attempt_at: Date }>(`SELECT * FROM ${table('message_outbox')} WHERE idempotency_key = ANY($1) ORDER BY seq`, [keys]);
  const eventsOf = async (...keys: string[]) =>
    (await world.sql<{ type: string; payload: { data: Record<string, unknown> } }>(`SELECT type, payload FROM ${table('outbox_events')} WHERE type LIKE 'outbox.entry.%' AND payload->'data'->>'idempotency_key' = ANY($1) ORDER BY id`, [keys])).map(
      (e): Record<string, unknown> & { type: string } => ({
        ...e.payload.data,
        type: e.type,
      }),
    );

  /** Runs `work` in one transaction whose statements are recorded (an outbox insert as `publish`); BEGIN and COMMIT are not counted. */
  async function counted<T>(work: (tx: Tx) => Promise<T>): Promise<{ result: T; statements: string[] }> {
    const statements: string[] = [];
    const result = await uow.run((tx) => {
      // The transaction's own methods, its statements and publishes recorded on the way.
      const recording: Tx = {
        ...tx,
        query: (sql, params) => {
          statements.push(sql.replace(/\s+/g, ' ').trim());
          return tx.query(sql, params);
        },
        publish: (messages) => {
          statements.push('publish');
          return tx.publish(messages);
        },
      };
      return work(recording);
    });
    return { result, statements };
  }
  /** A statement by its first words (enough to tell them apart here). */
  const head = (statement: string) => (statement === 'publish' ? statement : statement.split(' ').slice(0, 4).join(' '));

  /** What the bus does with a batch: the preparer, then each message's handler, in one transaction. */
  const runBatch = (messages: BusMessage<OutboxEnqueueData>[]) =>
    counted(async (tx) => {
      await sut.prepareEnqueues(messages, tx);
      for (const m of messages) await sut.onEnqueue(m, tx);
    });

  beforeAll(async () => {
    world = await createTestWorld('enqueue-batch');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox);
    uow = d.app.get(UnitOfWork);
    sut = d.app.get(EnqueueConsumer);
    org = `org-${randomUUID()}`;
    otherOrg = `org-${randomUUID()}`;
    senderId = await aWhatsAppNumber(d, org, '100000000000021');
    disconnectedId = await aWhatsAppNumber(d, org, '100000000000022');
    await world.sql(`UPDATE ${table('senders')} SET status = 'disconnected' WHERE id = $1`, [disconnectedId]);
    otherSenderId = await aWhatsAppNumber(d, otherOrg, '100000000000023');
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  /** What preparing a batch with a new key costs, a batch of one included: the keys' locks, their entries, senders, pairs, cancels in advance, and the entries' insert. */
  const PREPARE_AND_INSERT = ['SELECT pg_advisory_xact_lock(o, k) FROM', 'SELECT m.* FROM message_outbox', 'SELECT false AS as_default,', 'INSERT INTO message_outbox_pairs (organization_id,', 'SELECT organization_id, idempotency_key FROM', 'INSERT INTO message_outbox (id,'];

  describe('prepareEnqueues', () => {
    it('writes a mixed batch with six statements for the batch, the entries in one insert, rejecting the bad commands alone', async () => {
      const known = await d.enqueue.enqueue(textTo(org, newNumber()));
      const knownKey = (await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM ${table('message_outbox')} WHERE id = $1`, [known.entry_id]))[0].idempotency_key;
      const shared = newNumber();
      const fresh = textTo(org, newNumber());
      const samePairA = textTo(org, shared);
      const samePairB = textTo(org, `+${shared}`);
      const explicit = textTo(org, newNumber(), { sender_id: senderId.toUpperCase() });
      const ofOtherOrg = textTo(otherOrg, newNumber());
      const repeated = textTo(org, newNumber());
      const again = { ...repeated, payload: { type: 'text' as const, body: 'the second body' } };
      const cancelled = textTo(org, newNumber());
      expect(await d.enqueue.cancel({ organization_id: org, idempotency_key: cancelled.idempotency_key })).toEqual({ outcome: 'cancelled_in_advance' });
      const unknownSender = textTo(org, newNumber(), { sender_id: randomUUID() });
      const otherOrgsSender = textTo(org, newNumber(), { sender_id: otherSenderId });
      const disconnected = textTo(org, newNumber(), { sender_id: disconnectedId });
      const invalid = textTo(org, newNumber(), { payload: { type: 'text', body: '' } });
      const knownAgain = textTo(org, newNumber(), { idempotency_key: knownKey, sender_id: randomUUID() });
      const batch = [fresh, samePairA, unknownSender, samePairB, explicit, invalid, ofOtherOrg, repeated, again, cancelled, otherOrgsSender, disconnected, knownAgain].map(command);

      const { statements } = await runBatch(batch);

      // Before: six per command (the key's lock, its entry, the sender, the pair, the insert, the cancel in advance), 78 here;
      // then five for the batch and one insert per entry.
      expect(statements.slice(0, 6).map(head)).toEqual(PREPARE_AND_INSERT);
      const perCommand = statements.slice(6).map(head);
      // In the messages' order: fresh, samePairA (nothing: written by the batch), unknownSender (rejected), samePairB, explicit,
      // invalid (rejected), ofOtherOrg, repeated, again (its entry, nothing), cancelled (born cancelled), two more rejected, knownAgain (nothing).
      expect(perCommand).toEqual(['publish', 'publish', 'UPDATE message_outbox SET status', 'publish', 'publish', 'publish']);

      const written = await entriesOf(fresh.idempotency_key, samePairA.idempotency_key, samePairB.idempotency_key, explicit.idempotency_key, ofOtherOrg.idempotency_key, repeated.idempotency_key, cancelled.idempotency_key);
      expect(written.map((e) => [e.idempotency_key, e.status])).toEqual([
        [fresh.idempotency_key, 'pending'],
        [samePairA.idempotency_key, 'pending'],
        [samePairB.idempotency_key, 'pending'],
        [explicit.idempotency_key, 'pending'],
        [ofOtherOrg.idempotency_key, 'pending'],
        [repeated.idempotency_key, 'pending'],
        [cancelled.idempotency_key, 'cancelled'],
      ]);
      const byKey = new Map(written.map((e) => [e.idempotency_key, e]));
      expect(byKey.get(repeated.idempotency_key)!.payload.body).toBe((repeated.payload as { body: string }).body);
      expect(byKey.get(samePairA.idempotency_key)!.pair_id).toBe(byKey.get(samePairB.idempotency_key)!.pair_id);
      expect(byKey.get(fresh.idempotency_key)!.pair_id).not.toBe(byKey.get(samePairA.idempotency_key)!.pair_id);
      expect(byKey.get(explicit.idempotency_key)!.sender_id).toBe(senderId);
      expect(byKey.get(fresh.idempotency_key)!.sender_id).toBe(senderId);
      expect(byKey.get(ofOtherOrg.idempotency_key)).toMatchObject({ organization_id: otherOrg, sender_id: otherSenderId });
      expect(byKey.get(fresh.idempotency_key)!.next_attempt_at).toEqual(d.clock.now());
      const pairs = await world.sql<{ id: string; next_due_at: Date; sender_id: string }>(`SELECT id, next_due_at, sender_id FROM ${table('message_outbox_pairs')} WHERE id = ANY($1::bigint[])`, [written.map((e) => e.pair_id)]);
      expect(pairs).toHaveLength(6);
      for (const p of pairs) expect(p.next_due_at).toEqual(d.clock.now());
      expect(await entriesOf(unknownSender.idempotency_key, otherOrgsSender.idempotency_key, disconnected.idempotency_key, invalid.idempotency_key)).toEqual([]);
      expect((await entriesOf(knownKey)).map((e) => e.id)).toEqual([known.entry_id]);

      const events = await eventsOf(...batch.map((m) => m.data.idempotency_key));
      expect(events.map((e) => [e.type, e.idempotency_key, e.error_code ?? null, e.entry_id])).toEqual([
        [OutboxEvents.EntryFailed, unknownSender.idempotency_key, 'sender_not_found', ''],
        [OutboxEvents.EntryFailed, invalid.idempotency_key, 'invalid_payload', ''],
        [OutboxEvents.EntryCancelled, cancelled.idempotency_key, null, byKey.get(cancelled.idempotency_key)!.id],
        [OutboxEvents.EntryFailed, otherOrgsSender.idempotency_key, 'sender_not_found', ''],
        [OutboxEvents.EntryFailed, disconnected.idempotency_key, 'sender_disconnected', ''],
      ]);
      expect(events.find((e) => e.type === OutboxEvents.EntryCancelled)).toMatchObject({ reason: 'requested' });
    });

    it('answers a repeated key from the entry the batch wrote, also when that entry was born cancelled', async () => {
      const cancelled = textTo(org, newNumber());
      await d.enqueue.cancel({ organization_id: org, idempotency_key: cancelled.idempotency_key });
      const rejectedFirst = textTo(org, newNumber(), { sender_id: randomUUID() });
      const thenValid = { ...rejectedFirst, sender_id: undefined };
      const { statements } = await runBatch([cancelled, { ...cancelled }, rejectedFirst, thenValid, { ...thenValid }].map(command));
      // The batch's insert writes both keys' entries: the cancelled key's, and the valid command's after the rejected one.
      expect(statements.slice(5).map(head)).toEqual(['INSERT INTO message_outbox (id,', 'UPDATE message_outbox SET status', 'publish', 'publish']);
      expect((await entriesOf(cancelled.idempotency_key)).map((e) => e.status)).toEqual(['cancelled']);
      // The first command of the key named an unknown sender and was rejected; the next one wrote the entry with the default sender.
      expect((await entriesOf(rejectedFirst.idempotency_key)).map((e) => [e.status, e.sender_id])).toEqual([['pending', senderId]]);
      expect((await eventsOf(rejectedFirst.idempotency_key)).map((e) => [e.type, e.error_code])).toEqual([[OutboxEvents.EntryFailed, 'sender_not_found']]);
      expect((await eventsOf(cancelled.idempotency_key)).map((e) => e.type)).toEqual([OutboxEvents.EntryCancelled]);
    });

    it('leaves a batch of only rejected commands to their handlers, with no statement but their events', async () => {
      const invalid = textTo(org, newNumber(), { payload: { type: 'sticker' } as unknown as OutboxEnqueueData['payload'] });
      const noRecipient = textTo(org, 'ana@example.com');
      const { statements } = await runBatch([invalid, noRecipient].map(command));
      expect(statements).toEqual(['publish', 'publish']);
      expect((await eventsOf(invalid.idempotency_key, noRecipient.idempotency_key)).map((e) => e.error_code)).toEqual(['invalid_payload', 'invalid_recipient']);
    });
  });

  describe('onEnqueue', () => {
    it('costs what it did before when it runs alone (no preparer): six statements for a new key, two for a known one, three for an unknown sender', async () => {
      const data = textTo(org, newNumber());
      const alone = await counted((tx) => sut.onEnqueue(command(data), tx));
      expect(alone.statements.map(head)).toEqual(PREPARE_AND_INSERT);
      const repeat = await counted((tx) => sut.onEnqueue(command({ ...data }), tx));
      expect(repeat.statements).toHaveLength(2);
      const unknown = textTo(org, newNumber(), { sender_id: randomUUID() });
      const rejected = await counted((tx) => sut.onEnqueue(command(unknown), tx));
      expect(rejected.statements.map(head)).toEqual(['SELECT pg_advisory_xact_lock(o, k) FROM', 'SELECT m.* FROM message_outbox', 'SELECT false AS as_default,', 'publish']);
      expect(await entriesOf(data.idempotency_key)).toHaveLength(1);
      expect(await entriesOf(unknown.idempotency_key)).toHaveLength(0);
    });

    it('resolves a sender id that is not a uuid alone, as before (sender_not_found)', async () => {
      const data = textTo(org, newNumber(), { sender_id: 'not-a-uuid' });
      const { statements } = await runBatch([command(data), command(textTo(org, newNumber()))]);
      expect(statements.slice(5).map(head)).toEqual(['INSERT INTO message_outbox (id,', 'publish']);
      expect((await eventsOf(data.idempotency_key)).map((e) => e.error_code)).toEqual(['sender_not_found']);
    });
  });

  describe('through the bus', () => {
    it('takes commands that queue up in batches through the preparer, writes every entry and rejects the bad one alone', async () => {
      const service = d.app.get(EnqueueService);
      const sizes: number[] = [];
      const spy = jest.spyOn(service, 'prepareBatch').mockImplementation(async function (this: EnqueueService, items, tx) {
        sizes.push(items.length);
        return EnqueueService.prototype.prepareBatch.call(this, items, tx);
      });
      const rollbacks = async () => (await d.app.get(Metrics).busBatchRollbacks.get()).values.reduce((n, v) => n + v.value, 0);
      const before = await rollbacks();
      try {
        const good = Array.from({ length: 40 }, () => textTo(org, newNumber()));
        const bad = textTo(org, newNumber(), { sender_id: randomUUID() });
        const all = [...good.slice(0, 20), bad, ...good.slice(20)];
        await uow.run((tx) => tx.publish(all.map((data) => ({ event_id: `cmd:${data.idempotency_key}`, type: OutboxCommands.Enqueue, organization_id: org, data }))));
        await eventually(async () => (await entriesOf(...good.map((g) => g.idempotency_key))).length === good.length && (await eventsOf(bad.idempotency_key)).length > 0, 20_000);
        expect((await eventsOf(bad.idempotency_key)).map((e) => [e.type, e.error_code])).toEqual([[OutboxEvents.EntryFailed, 'sender_not_found']]);
        expect(await entriesOf(bad.idempotency_key)).toEqual([]);
        // With five transaction slots (DB_POOL_SIZE 10), the commands that wait for one go together.
        expect(Math.max(...sizes)).toBeGreaterThan(1);
        expect(await rollbacks()).toBe(before);
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('concurrent batches', () => {
    /** Two keys of `org`, the one whose lock sorts first (`OutboxRepository.lockKeys`) first. */
    async function twoKeys(): Promise<[string, string]> {
      const keys = [`race:${randomUUID()}`, `race:${randomUUID()}`];
      const [h] = await world.sql<{ a: number; b: number }>(`SELECT hashtext($1) AS a, hashtext($2) AS b`, [keys[0], keys[1]]);
      return h.a <= h.b ? [keys[0], keys[1]] : [keys[1], keys[0]];
    }

    /** Waits until the session `pid` waits for an advisory lock. */
    const waitingForLock = (pid: number) => eventually(async () => (await world.sql(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid = $1`, [pid])).length > 0);

    /**
     * Holds the first key's lock while `first`, then `second` start and wait for a lock (`first`
     * ahead in the queue: it gets the key first), then lets go. Were the locks of `second` taken in
     * another order, it would hold the second key while waiting for the first, and `first` would
     * then wait for it while holding the first (PostgreSQL: deadlock, 40P01).
     */
    async function race(first: (tx: Tx) => Promise<void>, second: (tx: Tx) => Promise<void>, lowKey: string): Promise<void> {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = uow.run(async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, [org, lowKey]);
        locked();
        await held;
      });
      await isLocked;
      const start = async (work: (tx: Tx) => Promise<void>) => {
        let pid!: (n: number) => void;
        const known = new Promise<number>((resolve) => (pid = resolve));
        const run = uow.run(async (tx) => {
          pid((await tx.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`))[0].pid);
          await work(tx);
        });
        run.catch(() => undefined);
        await waitingForLock(await known);
        // Wrapped: an async function's promise of a promise would wait for the transaction itself.
        return { run };
      };
      const a = await start(first);
      const b = await start(second);
      release();
      await holder;
      const outcomes = await Promise.allSettled([a.run, b.run]);
      expect(outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as Error).message) : 'committed'))).toEqual(['committed', 'committed']);
    }

    it('lets an enqueue batch and a cancel batch of the same keys in opposite orders both commit, and the reply wins', async () => {
      const [low, high] = await twoKeys();
      const enqueues = [textTo(org, newNumber(), { idempotency_key: low }), textTo(org, newNumber(), { idempotency_key: high })].map(command);
      const cancels = [high, low].map((key) => cancelCommand({ organization_id: org, idempotency_key: key }));
      await race(
        async (tx) => {
          await sut.prepareEnqueues(enqueues, tx);
          for (const m of enqueues) await sut.onEnqueue(m, tx);
        },
        async (tx) => {
          await sut.lockCancels(cancels, tx);
          for (const m of cancels) await sut.onCancel(m, tx);
        },
        low,
      );
      // Whichever went first, both entries exist and are cancelled: never sent.
      expect((await entriesOf(low, high)).map((e) => e.status)).toEqual(['cancelled', 'cancelled']);
      expect((await eventsOf(low, high)).map((e) => e.type)).toEqual([OutboxEvents.EntryCancelled, OutboxEvents.EntryCancelled]);
    });

    it('lets two enqueue batches of the same keys in opposite orders both commit, with one entry per key', async () => {
      const [low, high] = await twoKeys();
      const one = [textTo(org, newNumber(), { idempotency_key: low }), textTo(org, newNumber(), { idempotency_key: high })];
      const other = [
        { ...one[1], payload: { type: 'text' as const, body: 'other' } },
        { ...one[0], payload: { type: 'text' as const, body: 'other' } },
      ];
      const batchOf = (data: OutboxEnqueueData[]) => async (tx: Tx) => {
        const messages = data.map(command);
        await sut.prepareEnqueues(messages, tx);
        for (const m of messages) await sut.onEnqueue(m, tx);
      };
      await race(batchOf(one), batchOf(other), low);
      const rows = await entriesOf(low, high);
      expect(rows.map((e) => e.idempotency_key).sort()).toEqual([low, high].sort());
      // Both entries come from the same batch, whichever went first.
      expect(new Set(rows.map((e) => e.payload.body === 'other'))).toHaveProperty('size', 1);
    });
  });
});
