import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import type { WakeSignal } from './wake-signal.js';

/** Who a poll loop is, and how long it sleeps when idle. */
export interface PollLoopOptions {
  /** Service of the log events, e.g. `followups`. */
  service: string;
  /** The loop's name in its log events (`<service>.<name>_loop_error`), e.g. `promise`. */
  name: string;
  /** Sleep of an idle worker and after an error, ms. */
  pollMs: number;
}

/**
 * One worker per process that runs `step()` back to back while it finds work, and sleeps `pollMs`
 * when idle or after an error (seed 000: loops poll every second). Safe with any number of
 * replicas: each step claims its rows with SKIP LOCKED or a lease. The signal wakes it early and
 * lets shutdown interrupt the sleep. An error is logged (`<service>.<name>_loop_error`) and the
 * loop goes on after the sleep.
 *
 * For work due on a fixed period rather than as soon as it exists, see IntervalTask.
 */
export abstract class PollLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private worker: Promise<void> | undefined;

  protected constructor(
    private readonly options: PollLoopOptions,
    protected readonly signal: WakeSignal,
    protected readonly logger: Logger,
  ) {}

  /** Whether this loop runs in this process (its feature flags). */
  protected abstract enabled(): boolean;

  /** Does one unit of work; resolves false when there was nothing to do. */
  protected abstract step(): Promise<boolean>;

  onApplicationBootstrap(): void {
    if (!this.enabled()) return;
    this.running = true;
    this.worker = this.work();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    this.signal.wake();
    await this.worker;
  }

  private async work(): Promise<void> {
    const { service, name, pollMs } = this.options;
    while (this.running) {
      try {
        if (!(await this.step())) await this.signal.sleep(pollMs);
      } catch (err) {
        // The failed unit was rolled back and stays due; the next pass retries it.
        this.logger.error({ event: `${service}.${name}_loop_error`, err: (err as Error).message }, `${name} loop error`);
        await this.signal.sleep(pollMs);
      }
    }
  }
}
