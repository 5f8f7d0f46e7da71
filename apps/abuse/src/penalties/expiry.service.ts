import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { AbuseEvents } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
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
export class ExpiryService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: AbuseRepository,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: AbuseConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.ABUSE_EXPIRY_INTERVAL_MS <= 0) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.expireDue()
        .catch((err) => this.logger.warn({ event: 'abuse.expiry_failed', err: (err as Error).message }, 'expiry sweep failed'))
        .finally(() => (this.running = undefined));
    }, this.config.ABUSE_EXPIRY_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Expires every due action now; returns how many. */
  async expireDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const expired = await this.uow.run(async (tx) => {
        const rows = await this.repository.expireDue(tx, this.clock.now(), EXPIRY_BATCH);
        await tx.publish(
          rows.map((action) => ({ event_id: `abuse.action.expired:${action.action_id}`, type: AbuseEvents.ActionExpired, organization_id: action.organization_id, data: { action } })),
        );
        return rows.length;
      });
      total += expired;
      if (expired < EXPIRY_BATCH) return total;
    }
  }
}
