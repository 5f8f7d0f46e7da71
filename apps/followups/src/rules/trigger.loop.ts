import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { ReleaseSignal } from '../release/release-signal.js';
import { TriggersService } from './triggers.service.js';

/** The trigger loop (seed 000 "Rules"): batches back to back while any are due, else the poll interval. */
@Injectable()
export class TriggerLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private worker: Promise<void> | undefined;

  constructor(
    private readonly triggers: TriggersService,
    private readonly signal: ReleaseSignal,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.FOLLOWUP_RELEASE_ENABLED || !this.config.FOLLOWUP_TRIGGERS_ENABLED) return;
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
        if ((await this.triggers.processBatch()) === 0) await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      } catch (err) {
        this.logger.error({ event: 'followups.trigger_loop_error', err: (err as Error).message }, 'trigger loop error');
        await this.signal.sleep(this.config.FOLLOWUP_POLL_MS);
      }
    }
  }
}
