import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { RetentionService } from './retention.service.js';

/** The daily retention pass (seed 000 "Retention"); the advisory lock keeps replicas and the CLI to one pass at a time. */
@Injectable()
export class RetentionLoop implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly retention: RetentionService,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.FOLLOWUP_RELEASE_ENABLED || this.config.FOLLOWUP_RETENTION_INTERVAL_MS === 0) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.retention
        .run()
        .catch((err: Error) => this.logger.error({ event: 'followups.retention_failed', err: err.message }, 'retention pass failed'))
        .finally(() => (this.running = undefined));
    }, this.config.FOLLOWUP_RETENTION_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
