import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { PollLoop } from '../release/poll-loop.js';
import { ReleaseSignal } from '../release/release-signal.js';
import { BulkJobsService } from './bulk-jobs.service.js';

/** Runs bulk enrollment jobs one at a time per process; idle → the poll interval. */
@Injectable()
export class BulkLoop extends PollLoop {
  constructor(
    private readonly jobs: BulkJobsService,
    signal: ReleaseSignal,
    @Inject(APP_CONFIG) config: FollowupsConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    super('bulk', signal, config, logger);
  }

  protected enabled(): boolean {
    return this.config.FOLLOWUP_BULK_ENABLED;
  }

  protected async step(): Promise<boolean> {
    return Boolean(await this.jobs.runOne());
  }
}
