import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { ReleaseSignal } from '../release/release-signal.js';
import { PromisesService } from './promises.service.js';

/**
 * One worker that fires due one-off returns back to back, then sleeps the poll interval (seed 000:
 * loops poll every second). Safe with any number of replicas: the claim skips locked rows, and a
 * resumption in a model call holds a lease rather than a lock.
 */
@Injectable()
export class PromiseLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private worker: Promise<void> | undefined;

  constructor(
    private readonly promises: PromisesService,
    private readonly signal: ReleaseSignal,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.FOLLOWUP_RELEASE_ENABLED || !this.config.FOLLOWUP_PROMISES_ENABLED) return;
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
        if ((await this.promises.fireOne()) === 'idle') await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      } catch (err) {
        // One return failed (messaging unreachable for an alert…): its row was rolled back and stays due.
        this.logger.error({ event: 'followups.promise_loop_error', err: (err as Error).message }, 'promise loop error');
        await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      }
    }
  }
}
