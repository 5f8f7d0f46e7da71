import type { BusType, OutgoingMessage } from '@touchpoint/contracts';
import type { Statement, Tx } from '@touchpoint/database';

/**
 * Fakes for service specs (STYLE "Tests": a service's rules tested alone, `sut` built with fakes
 * instead of a platform). A fake answers only what the spec gave it; anything else throws naming
 * the member, so a spec that misses a dependency fails loudly instead of passing on `undefined`.
 */

/**
 * A fake of `T` with the given members; reading any other member gives a function that throws
 * `fake <label>: <member> was not expected`.
 */
export function fakeOf<T extends object>(members: Partial<T> = {}, label = 'dependency'): T {
  return new Proxy(members as T, {
    get(target, prop, receiver) {
      if (prop in target) return Reflect.get(target, prop, receiver);
      // Not a thenable, not a Jest matcher's probe.
      if (prop === 'then' || typeof prop === 'symbol' || prop === 'asymmetricMatch' || prop === 'toJSON') return undefined;
      return () => {
        throw new Error(`fake ${label}: ${String(prop)} was not expected`);
      };
    },
  });
}

/**
 * A transaction that runs no SQL: `publish` records the messages (as an outbox would, one per
 * `event_id`), `afterCommit` keeps the callbacks, and `query` answers with `onQuery` (by default
 * it throws: the service under test should reach SQL through its fakes).
 */
export class FakeTx implements Tx {
  readonly published: OutgoingMessage[] = [];
  readonly afterCommitted: (() => void)[] = [];
  readonly beforeCommitting: (() => Promise<void>)[] = [];
  readonly atCommitting: (() => Promise<Statement | void>)[] = [];
  private readonly savepoints: (() => void)[][] = [];
  readonly queries: { sql: string; params: unknown[] }[] = [];

  constructor(private readonly onQuery?: (sql: string, params: unknown[]) => unknown[]) {}

  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    this.queries.push({ sql, params });
    if (!this.onQuery) throw new Error(`fake tx: unexpected SQL ${sql.slice(0, 80)}`);
    return this.onQuery(sql, params) as T[];
  }

  async publish<K extends BusType>(messages: OutgoingMessage<K> | OutgoingMessage<K>[]): Promise<void> {
    // Every `OutgoingMessage<K>` is an `OutgoingMessage`; the compiler cannot see it for a generic K.
    for (const m of (Array.isArray(messages) ? messages : [messages]) as OutgoingMessage[]) {
      if (!this.published.some((p) => p.event_id === m.event_id)) this.published.push(m);
    }
  }

  afterCommit(callback: () => void): void {
    this.afterCommitted.push(callback);
  }

  /** Kept, not run: a spec that wants the deferred writes calls `commit()`. */
  beforeCommit(callback: () => Promise<void>): void {
    this.beforeCommitting.push(callback);
  }

  /** Kept, not run, like `beforeCommit`: `commit()` runs them after those. */
  atCommit(callback: () => Promise<Statement | void>): void {
    this.atCommitting.push(callback);
  }

  /** Runs `work`; when it throws, drops what was published inside it, runs the undo callbacks registered inside it, and rethrows (no SQL). */
  async savepoint<R>(work: () => Promise<R>): Promise<R> {
    const published = this.published.length;
    const frame: (() => void)[] = [];
    this.savepoints.push(frame);
    try {
      const result = await work();
      this.savepoints.pop();
      this.savepoints.at(-1)?.push(...frame);
      return result;
    } catch (err) {
      this.savepoints.pop();
      this.published.length = published;
      for (const undo of frame.reverse()) undo();
      throw err;
    }
  }

  onSavepointRollback(undo: () => void): void {
    this.savepoints.at(-1)?.push(undo);
  }

  /**
   * Runs the `beforeCommit` callbacks as a real commit would (the callbacks they register too), then
   * the `atCommit` ones, then the statements those answered (through `query`, so `onQuery` sees them).
   */
  async commit(): Promise<void> {
    while (this.beforeCommitting.length) await this.beforeCommitting.shift()!();
    const last: Statement[] = [];
    while (this.atCommitting.length) {
      const statement = await this.atCommitting.shift()!();
      if (statement) last.push(statement);
    }
    for (const { sql, params } of last) await this.query(sql, params ?? []);
  }
}

/** A unit of work whose `run` hands `tx` to the work (one fake transaction for the whole spec). */
export function fakeUnitOfWork(tx: Tx = new FakeTx()): { run<T>(work: (tx: Tx) => Promise<T>): Promise<T> } {
  return { run: (work) => work(tx) };
}

/** One line a `FakeLogger` was given. */
export interface LoggedLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  message?: string;
}

/** A logger that keeps its lines (`lines`, `events()` gives their `event` fields). */
export class FakeLogger {
  readonly lines: LoggedLine[] = [];
  debug = (fields: Record<string, unknown>, message?: string) => void this.lines.push({ level: 'debug', fields, message });
  info = (fields: Record<string, unknown>, message?: string) => void this.lines.push({ level: 'info', fields, message });
  warn = (fields: Record<string, unknown>, message?: string) => void this.lines.push({ level: 'warn', fields, message });
  error = (fields: Record<string, unknown>, message?: string) => void this.lines.push({ level: 'error', fields, message });

  /** The `event` field of every line, in order. */
  events(): unknown[] {
    return this.lines.map((l) => l.fields.event);
  }
}
