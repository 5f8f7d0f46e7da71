import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { AppError } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { toPhoneKey } from '@touchpoint/phone';
import { APP_CONFIG, LOGGER, WakeSignal } from '@touchpoint/runtime';
import type { MessagingConfig } from '../messaging.config.js';
import { type InboundReceiptRow, InboundReceiptsRepository } from './inbound-receipts.repository.js';
import { InboundReceiptsService } from './inbound-receipts.service.js';
import type { ReceiptHints } from './inbound.service.js';

/** First wait before a failed receipt is tried again, ms; it doubles per attempt up to INBOUND_RETRY_MAX_MS. */
const FIRST_RETRY_MS = 1000;

/**
 * Turns inbound receipts into messages: claims a batch, groups it by sender, runs up to
 * INBOUND_CONCURRENCY senders at once and each sender's messages one by one in arrival order
 * (flooding and spam detection, and the conversation, see them as they came), then deletes what
 * was processed. A message that fails (abuse unreachable with no answer from the read model, the
 * database gone) goes back with a doubling wait and is never dropped; the same sender's later
 * messages of that batch wait with it (one that arrives in a later batch may overtake it). A crash
 * between processing and the delete is harmless: the message row's unique provider id makes the
 * second pass a duplicate. Shapes the pipeline cannot read are refused at `accept`, not retried.
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
   * One pass: claims a batch and processes it. Exposed for tests, which run passes by hand.
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
    const done: string[] = [];
    const lanes = Array.from({ length: Math.min(this.config.INBOUND_CONCURRENCY, queues.length) }, async () => {
      for (let queue = queues.shift(); queue; queue = queues.shift()) await this.processSender(queue, done, hints);
    });
    await Promise.all(lanes);
    await this.receipts.remove(done);
    this.processed.inc({ result: 'done' }, done.length);
    return batch.length;
  }

  /** The receipts of one sender, in order; at the first failure, that one and the rest go back. */
  private async processSender(queue: InboundReceiptRow[], done: string[], hints: Map<string, ReceiptHints>): Promise<void> {
    for (let i = 0; i < queue.length; i++) {
      const r = queue[i]!;
      try {
        await this.inbound.processReceipt(r, hints.get(r.id));
        done.push(r.id);
        this.waited.observe((Date.now() - new Date(r.received_at).getTime()) / 1000);
      } catch (err) {
        const waitMs = Math.min(FIRST_RETRY_MS * 2 ** r.attempts, this.config.INBOUND_RETRY_MAX_MS);
        const rest = queue.slice(i).map((q) => q.id);
        const error = err instanceof AppError ? `${err.code}: ${err.message}` : (err as Error).message;
        this.logger.warn(
          { event: 'messaging.inbound_receipt_retry', organization_id: r.organization_id, channel: r.channel, external_id: r.external_id, attempts: r.attempts + 1, retry_in_ms: waitMs, waiting_behind: rest.length - 1, err: error },
          'inbound message not processed; it will be tried again',
        );
        await this.receipts.retry(rest, waitMs, { id: r.id, error }).catch((e: Error) =>
          // The lease ends anyway: the receipts come due again then.
          this.logger.error({ event: 'messaging.inbound_receipt_release_failed', err: e.message }, 'failed receipts not put back; their lease will expire'),
        );
        this.processed.inc({ result: 'retry' }, rest.length);
        return;
      }
    }
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

  private sleep(ms: number): Promise<void> {
    return this.pending || !this.running ? Promise.resolve() : this.signal.sleep(ms);
  }
}
