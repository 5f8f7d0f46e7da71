import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { ReleaseService } from './release.service.js';
import { ReleaseSignal } from './release-signal.js';

/**
 * The release workers of this process (FOLLOWUP_RELEASE_CONCURRENCY of them, DESIGN §1): each
 * releases due steps back to back while there are any, then sleeps until woken or the poll
 * interval passes (seed 000: loops poll every second). Safe with any number of replicas: the claim
 * skips rows another worker holds.
 */
@Injectable()
export class ReleaseLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private workers: Promise<void>[] = [];

  constructor(
    private readonly release: ReleaseService,
    private readonly signal: ReleaseSignal,
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

  private async work(worker: number): Promise<void> {
    while (this.running) {
      try {
        const outcome = await this.release.releaseOne();
        if (outcome === 'idle') await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      } catch (err) {
        // The database itself failed (not one enrollment): keep the worker alive and retry later.
        this.logger.error({ event: 'followups.release_loop_error', worker, err: (err as Error).message }, 'release loop error');
        await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      }
    }
  }
}
