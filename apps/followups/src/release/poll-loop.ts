import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import type { FollowupsConfig } from '../followups.config.js';
import type { ReleaseSignal } from './release-signal.js';

/**
 * One worker per process that runs `step()` back to back while it finds work, and sleeps
 * FOLLOWUP_POLL_MS (ms) when idle or after an error (seed 000: loops poll every second). Safe with
 * any number of replicas: each step claims its rows with SKIP LOCKED or a lease. The signal wakes it
 * early and lets shutdown interrupt the sleep.
 */
export abstract class PollLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private worker: Promise<void> | undefined;

  protected constructor(
    private readonly name: string,
    protected readonly signal: ReleaseSignal,
    protected readonly config: FollowupsConfig,
    protected readonly logger: Logger,
  ) {}

  /** Whether this loop runs in this process (its feature flag). */
  protected abstract enabled(): boolean;

  /** Does one unit of work; resolves false when there was nothing to do. */
  protected abstract step(): Promise<boolean>;

  onApplicationBootstrap(): void {
    if (!this.config.FOLLOWUP_RELEASE_ENABLED || !this.enabled()) return;
    this.running = true;
    this.worker = this.work();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    this.signal.wake();
    await this.worker;
  }

  private async work(): Promise<void> {
    while (this.running) {
      try {
        if (!(await this.step())) await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      } catch (err) {
        // The failed unit was rolled back and stays due; the next pass retries it.
        this.logger.error({ event: `followups.${this.name}_loop_error`, err: (err as Error).message }, `${this.name} loop error`);
        await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      }
    }
  }
}
