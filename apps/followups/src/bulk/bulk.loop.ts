import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { ReleaseSignal } from '../release/release-signal.js';
import { BulkJobsService } from './bulk-jobs.service.js';

/** Runs bulk enrollment jobs one at a time per process; idle → the poll interval. */
@Injectable()
export class BulkLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private worker: Promise<void> | undefined;

  constructor(
    private readonly jobs: BulkJobsService,
    private readonly signal: ReleaseSignal,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.FOLLOWUP_RELEASE_ENABLED || !this.config.FOLLOWUP_BULK_ENABLED) return;
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
        if (!(await this.jobs.runOne())) await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      } catch (err) {
        this.logger.error({ event: 'followups.bulk_loop_error', err: (err as Error).message }, 'bulk loop error');
        await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      }
    }
  }
}
