import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { AbuseEvents } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, IntervalTask, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { AbuseConfig } from '../abuse.config.js';
import { AbuseRepository } from '../check/abuse.repository.js';

/** Actions expired per transaction of the sweep. */
export const EXPIRY_BATCH = 500;

/**
 * Ends throttles and blocks on time (seed 004 "Progressive Penalties"; DESIGN §4 "expiry of
 * actions") and announces each with `abuse.action.expired`, so messaging's read model of active
 * restrictions follows. Safe in many replicas (SKIP LOCKED).
 */
@Injectable()
export class ExpiryService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly task: IntervalTask;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: AbuseRepository,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: AbuseConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.task = new IntervalTask({
      everyMs: config.ABUSE_EXPIRY_INTERVAL_MS,
      run: () => this.expireDue(),
      onError: (err) => this.logger.warn({ event: 'abuse.expiry_failed', err: err.message }, 'expiry sweep failed'),
    });
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  onModuleDestroy(): Promise<void> {
    return this.task.stop();
  }

  /** Expires every due action now; returns how many. */
  async expireDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const expired = await this.uow.run(async (tx) => {
        const rows = await this.repository.expireDue(tx, this.clock.now(), EXPIRY_BATCH);
        await tx.publish(rows.map((action) => ({ event_id: `abuse.action.expired:${action.action_id}`, type: AbuseEvents.ActionExpired, organization_id: action.organization_id, data: { action } })));
        return rows.length;
      });
      total += expired;
      if (expired < EXPIRY_BATCH) return total;
    }
  }
}
