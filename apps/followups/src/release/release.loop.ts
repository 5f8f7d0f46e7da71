import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, WakeSignal } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { ReleaseService } from './release.service.js';

/**
 * The release workers of this process (FOLLOWUP_RELEASE_CONCURRENCY of them, DESIGN §1): each
 * releases due steps back to back while there are any, up to FOLLOWUP_RELEASE_BATCH enrollments per
 * transaction, then sleeps until woken or the poll
 * interval passes (seed 000: loops poll every second), or less when a step it wrote is due sooner
 * (`ReleaseService.takeNextDue`). Safe with any number of replicas: the claim
 * skips rows another worker holds.
 */
@Injectable()
export class ReleaseLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private workers: Promise<void>[] = [];

  constructor(
    private readonly release: ReleaseService,
    private readonly signal: WakeSignal,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.FOLLOWUP_RELEASE_ENABLED) return;
    this.running = true;
    this.workers = Array.from({ length: this.config.FOLLOWUP_RELEASE_CONCURRENCY }, (_, i) => this.work(i));
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    this.signal.wake();
    await Promise.all(this.workers);
  }

  /** Sleeps until woken, the poll interval passes, or a step this process wrote is due (`ReleaseService.takeNextDue`). */
  private async idle(): Promise<void> {
    const poll = this.config.FOLLOWUP_POLL_MS;
    const due = this.release.takeNextDue(poll);
    if (due === null) {
      await this.signal.sleep(poll);
      return;
    }
    // A timer can fire a few ms before the claim's clock reaches `due` (it measures from a cached
    // loop time): the remainder is slept again, or the claim would find nothing and the worker
    // would wait a whole poll. Never longer than a poll on the monotonic clock, whatever the wall
    // clock does (a step back, a test's fixed clock).
    const pollEnds = performance.now() + poll;
    const left = () => Math.min(this.release.msUntil(due), pollEnds - performance.now());
    for (let ms = left(); ms > 0 && this.running; ms = left()) {
      if (await this.signal.sleep(ms)) {
        // Woken for other work before the moment: it stays for the next idle worker to wait for.
        if (this.release.msUntil(due) > 0) this.release.returnNextDue(due);
        return;
      }
    }
  }

  private async work(worker: number): Promise<void> {
    const batch = this.config.FOLLOWUP_RELEASE_BATCH;
    // After a batch failed as a whole (not in one enrollment's step), this many releases run one
    // enrollment per transaction, so an error only a single release can pin on its row is recorded
    // there instead of failing every batch that claims it.
    let singles = 0;
    while (this.running) {
      try {
        let idle: boolean;
        if (batch > 1 && singles === 0) idle = (await this.release.releaseBatch(batch)) === 0;
        else {
          singles = Math.max(0, singles - 1);
          idle = (await this.release.releaseOne()) === 'idle';
        }
        if (idle) await this.idle();
      } catch (err) {
        // The database itself failed, or a batch did as a whole: keep the worker alive, retry later one at a time.
        singles = batch;
        this.logger.error({ event: 'followups.release_loop_error', worker, err: (err as Error).message }, 'release loop error');
        await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      }
    }
  }
}
