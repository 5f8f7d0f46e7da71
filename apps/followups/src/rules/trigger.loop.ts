import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { PollLoop } from '../release/poll-loop.js';
import { ReleaseSignal } from '../release/release-signal.js';
import { TriggersService } from './triggers.service.js';

/** The trigger loop (seed 000 "Rules"): batches back to back while any are due, else the poll interval. */
@Injectable()
export class TriggerLoop extends PollLoop {
  constructor(
    private readonly triggers: TriggersService,
    signal: ReleaseSignal,
    @Inject(APP_CONFIG) config: FollowupsConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    super('trigger', signal, config, logger);
  }

  protected enabled(): boolean {
    return this.config.FOLLOWUP_TRIGGERS_ENABLED;
  }

  protected async step(): Promise<boolean> {
    return (await this.triggers.processBatch()) > 0;
  }
}
