import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { AppError } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { toPhoneKey } from '@touchpoint/phone';
import { APP_CONFIG, LOGGER, WakeSignal } from '@touchpoint/runtime';
import type { MessagingConfig } from '../messaging.config.js';
import { type InboundReceiptRow, InboundReceiptsRepository } from './inbound-receipts.repository.js';
import { InboundReceiptsService } from './inbound-receipts.service.js';
import type { AdmittedMessage, ReceiptHints, SenderLane } from './inbound.service.js';

/** An admitted message with the receipt it came from. */
interface Admitted {
  receipt: InboundReceiptRow;
  message: AdmittedMessage;
}

/** First wait before a failed receipt is tried again, ms; it doubles per attempt up to INBOUND_RETRY_MAX_MS. */
const FIRST_RETRY_MS = 1000;

/**
 * Turns inbound receipts into messages: claims a batch, groups it by sender, opens the threads of
 * its new senders in one transaction, judges up to
 * INBOUND_CONCURRENCY senders at once and each sender's messages one by one in arrival order
 * (flooding and spam detection, and the conversation, see them as they came), then stores the
 * batch's admitted messages and deletes its processed receipts in one transaction of set-based
 * statements. A message that fails (abuse unreachable with no answer from the read model, the
 * database gone) goes back with a doubling wait and is never dropped; the same sender's later
 * messages of that batch wait with it (one that arrives in a later batch may overtake it). A crash
 * before the commit stores nothing and deletes nothing (the lease ends, the batch is judged again);
 * a message stored by a rollover's flush or the one-by-one fallback before its receipt is deleted
 * is a duplicate the second time (the message row's unique provider id). Shapes the pipeline
 * cannot read are refused at `accept`, not retried.
 *
 * One worker per process, woken at once by `accept` and polling every INBOUND_POLL_MS for due
 * retries and for receipts other replicas accepted.
 */
@Injectable()
export class InboundReceiptsWorker implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private worker?: Promise<void>;
  private readonly signal = new WakeSignal();
  private pending = false;
  private readonly processed: Counter<'result'>;
  private readonly waited: Histogram;

  constructor(
    private readonly receipts: InboundReceiptsRepository,
    private readonly inbound: InboundReceiptsService,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.processed = new Counter({ name: `${METRIC_PREFIX}messaging_inbound_receipts_processed_total`, help: 'Inbound receipts the worker finished (done) or put back for a later try (retry)', labelNames: ['result'], registers: [metrics.registry] });
    this.waited = new Histogram({
      name: `${METRIC_PREFIX}messaging_inbound_receipt_wait_seconds`,
      help: 'Time from the acknowledged receipt to its processed message, seconds',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [metrics.registry],
    });
    // One backlog query per scrape fills both gauges (the first one's collect runs it).
    const oldest = new Gauge({ name: `${METRIC_PREFIX}messaging_inbound_receipt_oldest_seconds`, help: 'Age of the oldest inbound receipt not processed yet, seconds (0 when none)', registers: [] });
    new Gauge({
      name: `${METRIC_PREFIX}messaging_inbound_receipts_waiting`,
      help: 'Inbound receipts acknowledged to the provider and not processed yet',
      registers: [metrics.registry],
      async collect() {
        const backlog = await receipts.backlog();
        this.set(backlog.waiting);
        oldest.set(backlog.oldest_seconds);
      },
    });
    metrics.registry.registerMetric(oldest);
  }

  onApplicationBootstrap(): void {
    if (this.config.INBOUND_POLL_MS <= 0) return;
    this.inbound.onAccepted(() => this.wake());
    this.running = true;
    this.worker = this.work();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    this.wake();
    await this.worker;
  }

  /** Wakes the worker now (a receipt was accepted in this process). */
  wake(): void {
    this.pending = true;
    this.signal.wake();
  }

  /**
   * One pass: claims a batch, judges each sender's receipts in order (`InboundReceiptsService.admit`,
   * up to INBOUND_CONCURRENCY senders at once), then stores every admitted message and deletes every
   * finished receipt in ONE transaction (`commit`). Exposed for tests, which run passes by hand.
   * @returns how many receipts were claimed
   */
  async runOnce(): Promise<number> {
    const batch = await this.receipts.claim(this.config.INBOUND_BATCH, this.config.INBOUND_LEASE_MS);
    if (batch.length === 0) return 0;
    const bySender = new Map<string, InboundReceiptRow[]>();
    for (const r of batch) {
      // By phone key: both notations of a Brazilian mobile are one sender, in one lane.
      const from = String(r.message.from ?? r.external_id);
      const key = `${r.organization_id}|${r.channel}|${toPhoneKey(from) ?? from}`;
      bySender.set(key, [...(bySender.get(key) ?? []), r]);
    }
    const queues = [...bySender.values()];
    const hints = await this.inbound.hintsFor(batch);
    await this.inbound.openNewSenders(queues, hints);
    const finished: InboundReceiptRow[] = [];
    const admitted: Admitted[][] = [];
    const lanes = Array.from({ length: Math.min(this.config.INBOUND_CONCURRENCY, queues.length) }, async () => {
      for (let queue = queues.shift(); queue; queue = queues.shift()) admitted.push(await this.judgeSender(queue, finished, hints));
    });
    await Promise.all(lanes);
    await this.commit(admitted, finished);
    return batch.length;
  }

  /**
   * The receipts of one sender, judged in order; at the first failure, that one and the rest go
   * back. Receipts that need no store (duplicate, denied, ignored) join `finished`.
   * @returns the sender's admitted messages, in order, not yet stored
   */
  private async judgeSender(queue: InboundReceiptRow[], finished: InboundReceiptRow[], hints: Map<string, ReceiptHints>): Promise<Admitted[]> {
    const pending: Admitted[] = [];
    const lane: SenderLane = {
      open: hints.get(queue[0]!.id)?.open,
      admitted: 0,
      // Before a rollover or a number change, the sender's admitted messages are stored first, on their own.
      flush: async () => {
        if (pending.length === 0) return;
        const flushed = pending.splice(0);
        await this.inbound.commit(
          flushed.map((p) => p.message),
          flushed.map((p) => p.receipt.id),
        );
        this.finish(flushed.map((p) => p.receipt));
      },
    };
    for (let i = 0; i < queue.length; i++) {
      const r = queue[i]!;
      try {
        const outcome = await this.inbound.admit(r, hints.get(r.id)?.known ?? false, lane);
        if (typeof outcome === 'string') finished.push(r);
        else pending.push({ receipt: r, message: outcome });
      } catch (err) {
        await this.putBack(r, queue.slice(i), err);
        break;
      }
    }
    return pending;
  }

  /**
   * Stores the batch's admitted messages and deletes its finished receipts in one transaction. When
   * that fails, each sender's messages are stored one by one in order to find the failing one: it
   * and the rest of its sender go back (the ones before it stay stored), the others go through.
   */
  private async commit(admitted: Admitted[][], finished: InboundReceiptRow[]): Promise<void> {
    const all = admitted.flat();
    try {
      await this.inbound.commit(
        all.map((p) => p.message),
        [...finished, ...all.map((p) => p.receipt)].map((r) => r.id),
      );
      this.finish([...finished, ...all.map((p) => p.receipt)]);
      return;
    } catch (err) {
      this.logger.warn({ event: 'messaging.inbound_batch_failed', count: all.length, err: (err as Error).message }, 'inbound batch not stored at once; storing its messages one by one');
    }
    const done = [...finished];
    for (const pending of admitted) {
      for (let i = 0; i < pending.length; i++) {
        try {
          await this.inbound.storeOne(pending[i]!.message);
          done.push(pending[i]!.receipt);
        } catch (err) {
          await this.putBack(
            pending[i]!.receipt,
            pending.slice(i).map((p) => p.receipt),
            err,
          );
          break;
        }
      }
    }
    await this.receipts.remove(done.map((r) => r.id));
    this.finish(done);
  }

  /** Counts receipts processed (their messages, or their denial, are the record now). */
  private finish(receipts: InboundReceiptRow[]): void {
    for (const r of receipts) this.waited.observe((Date.now() - new Date(r.received_at).getTime()) / 1000);
    this.processed.inc({ result: 'done' }, receipts.length);
  }

  /** Puts `failed` and the rest of its sender (`rest`, failed first) back with a doubling wait. */
  private async putBack(failed: InboundReceiptRow, rest: InboundReceiptRow[], err: unknown): Promise<void> {
    const waitMs = Math.min(FIRST_RETRY_MS * 2 ** failed.attempts, this.config.INBOUND_RETRY_MAX_MS);
    const error = err instanceof AppError ? `${err.code}: ${err.message}` : (err as Error).message;
    this.logger.warn(
      { event: 'messaging.inbound_receipt_retry', organization_id: failed.organization_id, channel: failed.channel, external_id: failed.external_id, attempts: failed.attempts + 1, retry_in_ms: waitMs, waiting_behind: rest.length - 1, err: error },
      'inbound message not processed; it will be tried again',
    );
    await this.receipts
      .retry(
        rest.map((q) => q.id),
        waitMs,
        { id: failed.id, error },
      )
      .catch((e: Error) =>
        // The lease ends anyway: the receipts come due again then.
        this.logger.error({ event: 'messaging.inbound_receipt_release_failed', err: e.message }, 'failed receipts not put back; their lease will expire'),
      );
    this.processed.inc({ result: 'retry' }, rest.length);
  }

  private async work(): Promise<void> {
    while (this.running) {
      try {
        this.pending = false;
        const claimed = await this.runOnce();
        if (claimed > 0 || this.pending) continue;
      } catch (err) {
        this.logger.error({ event: 'messaging.inbound_worker_error', err: (err as Error).message }, 'inbound receipt worker error; retrying after the poll interval');
      }
      await this.sleep(this.config.INBOUND_POLL_MS);
    }
  }

  private sleep(ms: number): Promise<boolean> {
    return this.pending || !this.running ? Promise.resolve(false) : this.signal.sleep(ms);
  }
}
