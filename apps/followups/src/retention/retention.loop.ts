import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, IntervalTask, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { RetentionService } from './retention.service.js';

/** The daily retention pass (seed 000 "Retention"); the advisory lock keeps replicas and the CLI to one pass at a time. */
@Injectable()
export class RetentionLoop implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly task: IntervalTask;

  constructor(
    retention: RetentionService,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.task = new IntervalTask({
      everyMs: config.FOLLOWUP_RETENTION_INTERVAL_MS,
      run: () => retention.run(),
      onError: (err) => logger.error({ event: 'followups.retention_failed', err: err.message }, 'retention pass failed'),
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.FOLLOWUP_RELEASE_ENABLED) this.task.start();
  }

  onModuleDestroy(): Promise<void> {
    return this.task.stop();
  }
}
