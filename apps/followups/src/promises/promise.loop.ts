import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, PollLoop, WakeSignal } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { PromiseFiringService } from './promise-firing.service.js';

/**
 * Fires due one-off returns back to back, then sleeps the poll interval. A resumption waiting on a
 * model call holds a lease rather than a lock.
 */
@Injectable()
export class PromiseLoop extends PollLoop {
  constructor(
    private readonly promises: PromiseFiringService,
    signal: WakeSignal,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    super({ service: 'followups', name: 'promise', pollMs: config.FOLLOWUP_POLL_MS }, signal, logger);
  }

  protected enabled(): boolean {
    // Off with the release loop (an API-only replica), or on its own.
    return this.config.FOLLOWUP_RELEASE_ENABLED && this.config.FOLLOWUP_PROMISES_ENABLED;
  }

  protected async step(): Promise<boolean> {
    return (await this.promises.fireOne()) !== 'idle';
  }
}
