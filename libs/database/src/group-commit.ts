/** One caller's items, waiting for the write that takes them. */
interface Waiter<I, O> {
  items: I[];
  resolve: (out: O[]) => void;
  reject: (err: unknown) => void;
}

/** The callers of one key: who waits, and whether a write of that key is under way. */
interface Lane<I, O> {
  waiting: Waiter<I, O>[];
  busy: boolean;
}

/**
 * Group commit for concurrent callers: the items that callers hand in while a write of the same key
 * is under way go to the database together, in the next write of that key, instead of one
 * statement each. An idle key writes at once (a lone caller waits for nobody); under load the
 * groups grow by themselves, up to `maxItems` items per write (a caller's items are never split).
 * Each caller gets back the results of its own items, in its own order; the write must answer one
 * result per item, in the order given (the callers' items one after another, oldest caller first).
 *
 * A write that fails for a group of several callers is run again for each of them alone, so that a
 * caller whose items the statement refuses takes nobody else's down with it; a lone caller gets the
 * error.
 *
 * Per process: replicas each group their own callers. Used for Meta's status webhooks, per
 * business number, twice: the gateway hands the webhooks that arrive together to the
 * outbox-dispatcher in one RPC (`MetaWebhookService`), and the dispatcher writes the calls that
 * arrive together in one statement (`ResolutionService.recordWhatsAppStatuses`; it matters there
 * when several gateways call). The "write" may be any call that confirms durable storage.
 */
export class GroupCommit<I, O> {
  private readonly lanes = new Map<string, Lane<I, O>>();

  /**
   * @param write writes the items of one group; answers one result per item, in order
   * @param maxItems the most items one write takes (a caller with more still writes them all at once)
   * @param isolate whether a group's failure may be one caller's items (then each caller is written
   *   again alone); by default every failure. A failure that says nothing of the items (a store that
   *   did not answer in time) should not be isolated: it fails the whole group at once, and the
   *   callers of the key waiting behind it too. Written again one by one, each would wait its own
   *   deadline, and the key's later callers behind them all, a backlog growing as long as the store
   *   does not answer; a caller that comes after the failure starts the next write.
   */
  constructor(
    private readonly write: (key: string, items: I[]) => Promise<O[]>,
    private readonly maxItems = 500,
    private readonly isolate: (err: unknown) => boolean = () => true,
  ) {}

  /**
   * Hands `items` to the next write of `key`.
   * @returns the results of `items`, in order, once the write that took them has committed
   * @throws what the write threw, when `items` fail on their own
   */
  submit(key: string, items: I[]): Promise<O[]> {
    if (items.length === 0) return Promise.resolve([]);
    return new Promise<O[]>((resolve, reject) => {
      let lane = this.lanes.get(key);
      if (!lane) {
        lane = { waiting: [], busy: false };
        this.lanes.set(key, lane);
      }
      lane.waiting.push({ items, resolve, reject });
      if (!lane.busy) void this.run(key, lane);
    });
  }

  private async run(key: string, lane: Lane<I, O>): Promise<void> {
    lane.busy = true;
    try {
      while (lane.waiting.length > 0) {
        const group: Waiter<I, O>[] = [];
        let count = 0;
        while (lane.waiting.length > 0 && (group.length === 0 || count + lane.waiting[0].items.length <= this.maxItems)) {
          const next = lane.waiting.shift()!;
          group.push(next);
          count += next.items.length;
        }
        await this.writeGroup(key, lane, group);
      }
    } finally {
      lane.busy = false;
      if (lane.waiting.length === 0) this.lanes.delete(key);
    }
  }

  private async writeGroup(key: string, lane: Lane<I, O>, group: Waiter<I, O>[]): Promise<void> {
    let out: O[];
    try {
      out = await this.write(
        key,
        group.flatMap((w) => w.items),
      );
    } catch (err) {
      if (!this.isolate(err)) {
        // The store did not answer: the callers that came in meanwhile fail with this group instead
        // of each waiting out another deadline behind it (a backlog that would grow while it is down).
        for (const w of [...group, ...lane.waiting.splice(0)]) w.reject(err);
      } else if (group.length === 1) group[0]!.reject(err);
      else for (const w of group) await this.writeGroup(key, lane, [w]);
      return;
    }
    const expected = group.reduce((n, w) => n + w.items.length, 0);
    if (out.length !== expected) {
      const err = new Error(`group commit: the write answered ${out.length} results for ${expected} items`);
      for (const w of group) w.reject(err);
      return;
    }
    let at = 0;
    for (const w of group) {
      w.resolve(out.slice(at, at + w.items.length));
      at += w.items.length;
    }
  }
}
