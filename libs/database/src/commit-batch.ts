import type { Statement } from './folded-query.js';
import type { Tx } from './transaction.js';

/**
 * Writes that the handlers of one transaction hand over one at a time and that go to the database
 * together: the first `add` in a transaction registers a flush right before its commit
 * (`Tx.beforeCommit`), which gives `write` every item of that transaction in the order added. A
 * consumer batch of N messages (libs/bus `BUS_CONSUMER_BATCH`) then costs one statement per kind
 * of write instead of N. `flush` writes the items at once, for a handler that must see them before
 * it reads the same rows (arrival order stays the order of effect).
 *
 * The items commit with the transaction or not at all; a failing `write` rolls it back, and the
 * bus then runs each message of the batch alone.
 */
export class CommitBatch<T> {
  private readonly open = new WeakMap<Tx, T[]>();
  private statementOf?: (items: T[]) => Statement;

  constructor(private readonly write: (tx: Tx, items: T[]) => Promise<void>) {}

  /**
   * A batch written as the transaction's last statement, in the round trip of its COMMIT
   * (`Tx.atCommit`), instead of with the `beforeCommit` callbacks: for a write that takes a lock to
   * order commits. `statementOf` builds that one statement from the transaction's items; `flush`
   * cannot write it earlier.
   */
  static atCommit<T>(statementOf: (items: T[]) => Statement): CommitBatch<T> {
    const batch = new CommitBatch<T>(async () => {
      throw new Error('a CommitBatch.atCommit batch is written by the commit, not by flush');
    });
    batch.statementOf = statementOf;
    return batch;
  }

  /** Adds an item to `tx`'s batch (written before `tx` commits; dropped if a savepoint around the add is rolled back to). */
  add(tx: Tx, item: T): void {
    let items = this.open.get(tx);
    if (!items) {
      items = [];
      this.open.set(tx, items);
      this.flushAtCommit(tx);
    }
    const at = items.length;
    items.push(item);
    const batch = items;
    tx.onSavepointRollback(() => void (batch.length = Math.min(batch.length, at)));
  }

  /** Writes `tx`'s items now, if it has any (a later `add` starts a new batch). */
  async flush(tx: Tx): Promise<void> {
    const items = this.open.get(tx);
    if (!items) return;
    this.open.delete(tx);
    // Written inside a savepoint that is then rolled back to, the rows are undone by PostgreSQL: the
    // items go back into the batch. The undo callbacks of the adds made inside that savepoint run
    // around this one (newest first) and drop those, so what is left is what was added before it.
    tx.onSavepointRollback(() => {
      this.open.set(tx, items);
      this.flushAtCommit(tx);
    });
    if (items.length > 0) await this.write(tx, items);
  }

  private flushAtCommit(tx: Tx): void {
    const statementOf = this.statementOf;
    if (!statementOf) {
      tx.beforeCommit(() => this.flush(tx));
      return;
    }
    tx.atCommit(async () => {
      const items = this.open.get(tx);
      this.open.delete(tx);
      return items && items.length > 0 ? statementOf(items) : undefined;
    });
  }
}
