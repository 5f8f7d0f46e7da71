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

  constructor(private readonly write: (tx: Tx, items: T[]) => Promise<void>) {}

  /** Adds an item to `tx`'s batch (written before `tx` commits). */
  add(tx: Tx, item: T): void {
    let items = this.open.get(tx);
    if (!items) {
      items = [];
      this.open.set(tx, items);
      tx.beforeCommit(() => this.flush(tx));
    }
    items.push(item);
  }

  /** Writes `tx`'s items now, if it has any (a later `add` starts a new batch). */
  async flush(tx: Tx): Promise<void> {
    const items = this.open.get(tx);
    if (!items) return;
    this.open.delete(tx);
    await this.write(tx, items);
  }
}
