import pg from 'pg';
import type { DataSource } from 'typeorm';
import type { BusMessage } from '@touchpoint/contracts';
import { onOutboxCommitted, outboxChannel, quoteIdent, runInTransaction, genericPlan } from '@touchpoint/database';
import type { Logger, Metrics } from '@touchpoint/observability';
import type { BusConnection } from './bus.js';

export interface RelayOptions {
  schema: string;
  databaseUrl: string;
  /** Rows claimed and published per batch. */
  batchSize?: number;
  /** Polling backstop when no NOTIFY arrives, ms. */
  pollIntervalMs?: number;
  /** Published outbox rows and inbox rows are deleted after this many days. */
  retentionDays?: number;
}

/** Rows per relay batch: large enough for batched confirms, small enough to keep the lock short. */
export const RELAY_BATCH_SIZE = 500;

/**
 * Publishes a schema's unpublished `outbox_events` rows to the broker (DESIGN §2). Woken right
 * after each commit of this process that wrote outbox rows, by LISTEN/NOTIFY for writers in other
 * processes, and backed by polling; claims rows with `FOR UPDATE SKIP LOCKED` so any number of
 * replicas can run it; marks rows published only after the broker confirmed every message of the
 * batch, in the same transaction that locked them. A crash before that commit publishes the batch
 * again later: at-least-once, deduplicated by the consumers' inbox.
 */
export class OutboxRelay {
  private running = false;
  private wakeUp?: () => void;
  private pendingWake = false;
  private listener?: pg.Client;
  private loop?: Promise<void>;
  private unregister?: () => void;
  private lastLagAt = 0;
  private lastPrune = 0;
  private lagSeconds = 0;

  constructor(
    private readonly options: RelayOptions,
    private readonly dataSource: DataSource,
    private readonly bus: BusConnection,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  /** Age of the oldest unpublished row at the last check, seconds. */
  get lag(): number {
    return this.lagSeconds;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // Commits of this process wake the relay directly; NOTIFY covers writers in other processes.
    this.unregister = onOutboxCommitted(this.options.schema, () => this.wake());
    void this.listen();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unregister?.();
    this.wake();
    await this.loop;
    await this.listener?.end().catch(() => undefined);
  }

  /** Asks the loop to drain now (also called by NOTIFY). */
  wake(): void {
    this.pendingWake = true;
    this.wakeUp?.();
  }

  /** Publishes until the outbox is empty; returns how many rows were published. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.publishBatch();
      total += n;
      if (n < (this.options.batchSize ?? RELAY_BATCH_SIZE)) return total;
    }
  }

  private async run(): Promise<void> {
    const poll = this.options.pollIntervalMs ?? 1000;
    while (this.running) {
      this.pendingWake = false;
      try {
        await this.drain();
        await this.pruneIfDue();
      } catch (err) {
        this.logger.warn({ event: 'bus.relay_failed', err: (err as Error).message }, 'relay batch failed; will retry');
        await new Promise((r) => setTimeout(r, 500));
      }
      // Measured whether or not the drain worked: a relay stuck on a batch must show its lag
      // (metric and /health/ready), not the last good value.
      await this.measureLag().catch((err: Error) => this.logger.warn({ event: 'bus.relay_lag_unread', err: err.message }, 'relay lag not measured'));
      if (!this.running) break;
      if (this.pendingWake) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, poll);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
  }

  private async publishBatch(): Promise<number> {
    if (!this.bus.isConnected()) return 0;
    const limit = this.options.batchSize ?? RELAY_BATCH_SIZE;
    const published = await runInTransaction(this.dataSource, this.options.schema, async (tx) => {
      // Marked and read in one statement; the mark commits only after the broker confirmed every
      // message (a failed publish rolls it back, and the rows go again: at least once). The rows
      // stay locked until then, and SKIP LOCKED lets a second relay replica take the next ones.
      const rows = await tx.query<{ id: string; payload: BusMessage }>(
        genericPlan(`UPDATE outbox_events SET published_at = clock_timestamp(), publish_attempts = publish_attempts + 1
          WHERE id IN (SELECT id FROM outbox_events WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
          RETURNING id::text AS id, payload`),
        [limit],
      );
      if (rows.length === 0) return rows;
      // In outbox id order, as they were written (RETURNING has no order of its own).
      rows.sort((a, b) => a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      await this.bus.publishConfirmed(rows.map((r) => r.payload));
      return rows;
    });
    for (const r of published) this.metrics.busPublished.inc({ type: r.payload.type });
    return published.length;
  }

  private async measureLag(): Promise<void> {
    // Once a second is enough for the gauge and the health check; per wake-up it cost a round trip per commit under load.
    if (Date.now() - this.lastLagAt < 1000) return;
    this.lastLagAt = Date.now();
    const rows: { age: number | null }[] = await this.dataSource.query(
      `SELECT EXTRACT(EPOCH FROM clock_timestamp() - created_at)::float8 AS age
         FROM outbox_events WHERE published_at IS NULL ORDER BY id LIMIT 1`,
    );
    this.lagSeconds = rows[0]?.age ?? 0;
    this.metrics.relayLagSeconds.set(this.lagSeconds);
  }

  private async pruneIfDue(): Promise<void> {
    if (Date.now() - this.lastPrune < 3_600_000) return;
    this.lastPrune = Date.now();
    const days = this.options.retentionDays ?? 7;
    await this.dataSource.query(`DELETE FROM outbox_events WHERE published_at < now() - make_interval(days => $1)`, [days]);
    await this.dataSource.query(`DELETE FROM inbox_events WHERE handled_at < now() - make_interval(days => $1)`, [days * 4]);
  }

  private async listen(): Promise<void> {
    while (this.running) {
      const client = new pg.Client({ connectionString: this.options.databaseUrl });
      try {
        await client.connect();
        this.listener = client;
        client.on('notification', () => this.wake());
        await client.query(`LISTEN ${quoteIdent(outboxChannel(this.options.schema))}`);
        await new Promise<void>((resolve) => {
          client.once('error', () => resolve());
          client.once('end', () => resolve());
        });
      } catch (err) {
        if (this.running) this.logger.warn({ event: 'bus.relay_listen_failed', err: (err as Error).message }, 'LISTEN failed; polling only');
      }
      await client.end().catch(() => undefined);
      if (this.running) await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
