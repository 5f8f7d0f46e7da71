import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, PollLoop, WakeSignal } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { BulkJobsService } from './bulk-jobs.service.js';

/** Runs bulk enrollment jobs one at a time per process; idle → the poll interval. */
@Injectable()
export class BulkLoop extends PollLoop {
  constructor(
    private readonly jobs: BulkJobsService,
    signal: WakeSignal,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    super({ service: 'followups', name: 'bulk', pollMs: config.FOLLOWUP_POLL_MS }, signal, logger);
  }

  protected enabled(): boolean {
    // Off with the release loop (an API-only replica), or on its own.
    return this.config.FOLLOWUP_RELEASE_ENABLED && this.config.FOLLOWUP_BULK_ENABLED;
  }

  protected async step(): Promise<boolean> {
    return Boolean(await this.jobs.runOne());
  }
}
