import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, tryWithAdvisoryLock, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { MessagingConfig } from '../messaging.config.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { InstancesService } from './instances.service.js';

/**
 * The hourly pass (seed 004 "Idle closing"): close idle instances, retry missing summaries, and
 * prune the real-time feed. Runs alone across replicas (advisory lock).
 */
@Injectable()
export class InstanceSweepService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly instances: InstancesService,
    private readonly stream: StreamRepository,
    private readonly uow: UnitOfWork,
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.INSTANCE_SWEEP_INTERVAL_MS <= 0) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.runOnce().finally(() => (this.running = undefined));
    }, this.config.INSTANCE_SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass; each step isolated, so a failing summary never stops the idle close. */
  async runOnce(): Promise<void> {
    await tryWithAdvisoryLock(this.dataSource, `messaging:instance-sweep:${this.uow.schema}`, async () => {
      try {
        const result = await this.instances.sweep();
        this.logger.info({ event: 'messaging.instance_sweep', ...result }, 'instance sweep done');
      } catch (err) {
        this.logger.error({ event: 'messaging.instance_sweep_failed', err: (err as Error).message }, 'instance sweep failed');
      }
      try {
        await this.uow.run((tx) => this.stream.prune(tx, new Date(this.clock.now().getTime() - this.config.STREAM_RETENTION_MS)));
      } catch (err) {
        this.logger.warn({ event: 'messaging.stream_prune_failed', err: (err as Error).message }, 'stream prune failed');
      }
    });
  }
}
