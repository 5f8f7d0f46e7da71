import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { PollLoop } from '../release/poll-loop.js';
import { ReleaseSignal } from '../release/release-signal.js';
import { PromiseFiringService } from './promise-firing.service.js';

/**
 * Fires due one-off returns back to back, then sleeps the poll interval. A resumption waiting on a
 * model call holds a lease rather than a lock.
 */
@Injectable()
export class PromiseLoop extends PollLoop {
  constructor(
    private readonly promises: PromiseFiringService,
    signal: ReleaseSignal,
    @Inject(APP_CONFIG) config: FollowupsConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    super('promise', signal, config, logger);
  }

  protected enabled(): boolean {
    return this.config.FOLLOWUP_PROMISES_ENABLED;
  }

  protected async step(): Promise<boolean> {
    return (await this.promises.fireOne()) !== 'idle';
  }
}
