import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, PollLoop, WakeSignal } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { TriggersService } from './triggers.service.js';

/** The trigger loop (seed 000 "Rules"): batches back to back while any are due, else the poll interval. */
@Injectable()
export class TriggerLoop extends PollLoop {
  constructor(
    private readonly triggers: TriggersService,
    signal: WakeSignal,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    super({ service: 'followups', name: 'trigger', pollMs: config.FOLLOWUP_POLL_MS }, signal, logger);
  }

  protected enabled(): boolean {
    // Off with the release loop (an API-only replica), or on its own.
    return this.config.FOLLOWUP_RELEASE_ENABLED && this.config.FOLLOWUP_TRIGGERS_ENABLED;
  }

  protected async step(): Promise<boolean> {
    return (await this.triggers.processBatch()) > 0;
  }
}
