import { genericPlan } from './folded-query.js';
import type pg from 'pg';
import type { DataSource } from 'typeorm';
import type { BusType, OutgoingMessage } from '@touchpoint/contracts';
import { PreparingClient } from './data-source.js';
import type { Statement } from './folded-query.js';

/** The notification channel the relay of a schema listens on (notified by a trigger on insert). */
export const outboxChannel = (schema: string): string => `outbox_${schema}`;

/** A unit of work: the transaction's manager plus the outbox (DESIGN §2). */
export interface Tx {
  /** Runs SQL in the transaction; returns the rows (also of an UPDATE or DELETE … RETURNING). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Writes events or commands into this schema's `outbox_events` in the same transaction, so they
   * are published if and only if the transaction commits. A message whose `event_id` is already
   * in the outbox is ignored (same cause → same id → one message). The rows are written right
   * before COMMIT (after the `beforeCommit` callbacks), every call of the transaction in one
   * statement and in call order, so a consumer batch of N messages that each publish costs one
   * insert, not N; an insert that fails rolls the transaction back there.
   */
  publish<K extends BusType>(messages: OutgoingMessage<K> | OutgoingMessage<K>[]): Promise<void>;
  /**
   * Runs `callback` right after this transaction commits (never after a rollback); for signals
   * that must not hold up the commit, such as waking workers of other processes.
   */
  afterCommit(callback: () => void): void;
  /**
   * Runs `callback` after the work and right before COMMIT, in the order registered (one that
   * registers another runs that one too); a failure rolls the whole transaction back. For writes
   * that the handlers of one consumer batch hand over one by one and that go to the database
   * together (`CommitBatch`).
   */
  beforeCommit(callback: () => Promise<void>): void;
  /**
   * Runs `callback` as the transaction's last work, after the `beforeCommit` callbacks, in the order
   * registered. The statement it answers (if any) runs after every callback, with the outbox rows
   * before it and COMMIT right after it, all in one round trip (`runInTransaction`): a lock it takes
   * is held through the commit and nothing else, not even a network wait, so it can order commits
   * (the live feed's ids, messaging `StreamRepository`) without waiting on a lock the transaction
   * takes later. A callback must not `publish` (the outbox is being written: it throws) nor
   * register another.
   */
  atCommit(callback: () => Promise<Statement | void>): void;
  /**
   * Runs `work` inside a savepoint. When it resolves, the savepoint is released; when it throws,
   * the transaction is rolled back to the savepoint (its statements undone, and what `publish`
   * and `CommitBatch.add` were given inside it dropped) and the error is rethrown, the transaction
   * still usable. Calls nest. The one way to use savepoints: a raw `SAVEPOINT` statement is not
   * seen by the outbox. If the rollback itself fails (the connection broke), that error is thrown
   * instead and every later statement of the transaction fails with it.
   */
  savepoint<R>(work: () => Promise<R>): Promise<R>;
  /**
   * Registers `undo` to run if the innermost savepoint open now is rolled back to (also when an
   * enclosing one is); with no savepoint open it is never called, since a failed transaction
   * drops everything anyway. For buffers that hold writes until the commit (`CommitBatch`).
   */
  onSavepointRollback(undo: () => void): void;
}

export type IsolationLevel = 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';

/** Relays of this process by schema: what a commit that wrote outbox rows wakes. */
const localRelays = new Map<string, Set<() => void>>();
/** Channels with a NOTIFY queued for the next tick (one per tick, however many commits). */
const notifyQueued = new Set<string>();

/**
 * Registers `wake` as a relay of this process for `schema`: every transaction of this process that
 * wrote outbox rows of the schema calls it right after its commit.
 * @returns the function that unregisters it
 */
export function onOutboxCommitted(schema: string, wake: () => void): () => void {
  const set = localRelays.get(schema) ?? new Set();
  set.add(wake);
  localRelays.set(schema, set);
  return () => {
    set.delete(wake);
    if (set.size === 0) localRelays.delete(schema);
  };
}

/**
 * After the commit of outbox rows: wakes this process's relays of the schema; with none here (the
 * admin CLI, a tool), sends one `NOTIFY outbox_<schema>` outside any transaction, coalesced per
 * tick, for the service's relay elsewhere. Called by `runInTransaction`; a caller that wrote outbox
 * rows in one autocommitted statement of its own (`outboxPayload`) calls it after that statement.
 * Never a NOTIFY inside the business transaction: a
 * notifying commit takes PostgreSQL's global notify-queue lock and holds it through the WAL flush,
 * which serialised every outbox commit of the database (measured: 13,000 → 4,100 commits/s).
 */
export function outboxCommitted(dataSource: DataSource, schema: string): void {
  const relays = localRelays.get(schema);
  if (relays?.size) {
    for (const wake of relays) wake();
    return;
  }
  notifySoon(dataSource, outboxChannel(schema));
}

/**
 * Sends `NOTIFY channel` on its own, outside any transaction, at most once per tick however many
 * callers ask in it. Best effort: listeners poll as a backstop, so a lost one costs latency only.
 */
export function notifySoon(dataSource: DataSource, channel: string): void {
  if (notifyQueued.has(channel)) return;
  notifyQueued.add(channel);
  setImmediate(() => {
    notifyQueued.delete(channel);
    dataSource.query(`SELECT pg_notify($1, '')`, [channel]).catch(() => undefined);
  });
}

/**
 * The `payload` column of an `outbox_events` row for `message` (the bus message as published, with
 * `occurred_at`, UTC ISO-8601): for a statement that writes its outbox rows itself, in a
 * data-modifying CTE beside the business rows, instead of a transaction around two statements.
 */
export function outboxPayload<K extends BusType>(message: OutgoingMessage<K>, occurredAt: string): string {
  return JSON.stringify({ ...message, occurred_at: occurredAt });
}

/** An `outbox_events` row as `publish` was given it (`payload`: the JSON text, see `outboxPayload`). */
interface OutboxRow {
  event_id: string;
  type: string;
  organization_id: string | null;
  payload: string;
}

/** Outbox rows per INSERT: one statement carries a batch's rows as four arrays. */
const OUTBOX_ROWS_PER_INSERT = 1000;

/**
 * The statements writing a transaction's published messages into `outbox_events`, in call order, one per
 * OUTBOX_ROWS_PER_INSERT of them; an `event_id` already there (or given twice) is skipped. The rows
 * go as arrays (`unnest … WITH ORDINALITY`, in order), so the text is the same for every batch size
 * and the statement is prepared once per connection (`PreparingClient`), not once per batch size.
 * @returns the statements, none for no rows
 */
function outboxStatements(outbox: OutboxRow[]): Statement[] {
  const statements: Statement[] = [];
  for (let from = 0; from < outbox.length; from += OUTBOX_ROWS_PER_INSERT) {
    const rows = outbox.slice(from, from + OUTBOX_ROWS_PER_INSERT);
    statements.push({
      sql: genericPlan(`INSERT INTO outbox_events (event_id, type, organization_id, payload)
         SELECT v.event_id, v.type, v.organization_id, v.payload::jsonb
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS v(event_id, type, organization_id, payload, n)
          ORDER BY v.n
         ON CONFLICT (event_id) DO NOTHING`),
      params: [rows.map((r) => r.event_id), rows.map((r) => r.type), rows.map((r) => r.organization_id), rows.map((r) => r.payload)],
    });
  }
  return statements;
}

/**
 * Runs `work` in one transaction that also carries the outbox. `now` stamps `occurred_at`
 * (UTC ISO-8601). After a commit that wrote outbox rows, the schema's relay is woken (see
 * `onOutboxCommitted`). `lockTimeoutMs` (> 0) bounds every lock wait of the transaction (PostgreSQL
 * `lock_timeout`): a statement that waits longer fails with SQLSTATE 55P03.
 */
export async function runInTransaction<T>(dataSource: DataSource, schema: string, work: (tx: Tx) => Promise<T>, options: { isolation?: IsolationLevel; now?: () => Date; lockTimeoutMs?: number } = {}): Promise<T> {
  const now = options.now ?? (() => new Date());
  // The data source's own pg pool, used directly: TypeORM's query runner cost as much CPU per
  // statement as the statement, and nothing here needs an entity manager.
  const pool = (dataSource.driver as unknown as { master?: pg.Pool }).master;
  if (!pool) throw new Error('the data source is not initialized');
  const client = await pool.connect();
  let broken: Error | undefined;
  // The pool stops listening for a client's errors while it is checked out. A connection that drops
  // while `work` awaits something else (no query in flight) makes pg emit `error`: unheard, that
  // crashed the service (the chaos harness's database cuts). Heard, it marks the client
  // broken; the next statement fails with its own error and the pool discards the client.
  const onError = (err: Error) => (broken ??= err);
  client.on('error', onError);
  let published: boolean;
  const committed: (() => void)[] = [];
  const beforeCommit: (() => Promise<void>)[] = [];
  const atCommit: (() => Promise<Statement | void>)[] = [];
  /** The outbox rows `publish` was given, in call order, each written out (and stamped) when it was given. */
  const outbox: OutboxRow[] = [];
  let outboxWritten = false;
  /** Savepoints open, oldest first: how many outbox rows were given before each, and its undo callbacks. */
  const savepoints: { published: number; undo: (() => void)[] }[] = [];
  /** A savepoint that could not be rolled back to: the transaction is lost, every later statement fails with it. */
  let lost: Error | undefined;
  const folder = client instanceof PreparingClient ? client : undefined;
  const folding = folder !== undefined;
  const begin = [options.isolation ? `BEGIN ISOLATION LEVEL ${options.isolation}` : 'BEGIN'];
  const lockTimeout = options.lockTimeoutMs && options.lockTimeoutMs > 0 ? Math.ceil(options.lockTimeoutMs) : 0;
  if (lockTimeout) begin.push(`SET LOCAL lock_timeout = ${lockTimeout}`);
  /**
   * BEGIN (and its SET LOCAL) not sent yet: it goes in the round trip of the transaction's first
   * statement (`PreparingClient.queryFolded`). A round trip is most of a short statement's cost,
   * on both sides; a transaction that sends nothing costs none.
   */
  let pendingBegin = folding;
  const query = async <R>(sql: string, params?: unknown[]): Promise<R[]> => {
    if (lost) throw lost;
    if (pendingBegin) {
      pendingBegin = false;
      if (params && params.length > 0) return (await folder!.queryFolded([...begin.map((b) => ({ sql: b })), { sql, params }])).at(-1)!.rows as R[];
      // Without parameters `sql` may hold several statements, which only the simple protocol takes.
      const results = (await client.query(`${begin.join('; ')}; ${sql}`)) as unknown as pg.QueryResult[];
      const own = results.slice(begin.length);
      return (own.length === 1 ? own[0]!.rows : undefined) as R[];
    }
    return (await client.query(sql, params as unknown[])).rows as R[];
  };
  const tx: Tx = {
    query,
    publish: async (input) => {
      if (outboxWritten) throw new Error('publish after the outbox was written (in an atCommit callback)');
      const occurredAt = now().toISOString();
      // Serialised now: a caller that changes its object after publishing does not change the event.
      for (const m of Array.isArray(input) ? input : [input]) outbox.push({ event_id: m.event_id, type: m.type, organization_id: m.organization_id, payload: outboxPayload(m, occurredAt) });
    },
    afterCommit: (callback) => void committed.push(callback),
    beforeCommit: (callback) => void beforeCommit.push(callback),
    atCommit: (callback) => void atCommit.push(callback),
    onSavepointRollback: (undo) => void savepoints.at(-1)?.undo.push(undo),
    savepoint: async (work) => {
      // By depth: a nested savepoint gets its own name, and a sibling reuses a released one's.
      const name = `tp_savepoint_${savepoints.length}`;
      await query(`SAVEPOINT ${name}`);
      const frame = { published: outbox.length, undo: [] as (() => void)[] };
      savepoints.push(frame);
      let result: Awaited<ReturnType<typeof work>>;
      try {
        result = await work();
      } catch (err) {
        savepoints.pop();
        outbox.length = frame.published;
        for (let i = frame.undo.length - 1; i >= 0; i--) frame.undo[i]();
        try {
          await query(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`);
        } catch (rollbackError) {
          lost ??= rollbackError as Error;
          throw rollbackError;
        }
        throw err;
      }
      savepoints.pop();
      // Released: what it registered is undone if an enclosing savepoint is rolled back to.
      savepoints.at(-1)?.undo.push(...frame.undo);
      await query(`RELEASE SAVEPOINT ${name}`);
      return result;
    },
  };
  let result: T;
  try {
    // A client that cannot fold (not ours): BEGIN and its SET LOCAL in one simple-protocol round trip.
    if (!folding) await client.query(begin.join('; '));
    result = await work(tx);
    // By index: a callback may register another, which runs in the same pass.
    for (let i = 0; i < beforeCommit.length; i++) await beforeCommit[i]();
    outboxWritten = true;
    const last: Statement[] = [];
    for (const callback of atCommit) {
      const statement = await callback();
      if (statement) last.push(statement);
    }
    if (lost) throw lost;
    last.unshift(...outboxStatements(outbox));
    published = outbox.length > 0;
    if (folding) {
      // The outbox rows, the atCommit statements and COMMIT in one round trip (with BEGIN when
      // nothing was sent yet; a transaction that wrote nothing sends nothing). A failing step
      // skips the COMMIT, and the ROLLBACK below ends the transaction.
      if (pendingBegin && last.length === 0) pendingBegin = false;
      else {
        const steps = [...(pendingBegin ? begin.map((b) => ({ sql: b })) : []), ...last, { sql: 'COMMIT' }];
        pendingBegin = false;
        await folder!.queryFolded(steps);
      }
    } else {
      for (const statement of last) await query(statement.sql, statement.params);
      await client.query('COMMIT');
    }
  } catch (err) {
    // A connection that cannot even roll back is dropped from the pool, not reused.
    // Nothing sent yet (the work failed before its first statement): there is nothing to roll back.
    if (!pendingBegin) await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
  if (published) outboxCommitted(dataSource, schema);
  for (const callback of committed) callback();
  return result;
}
