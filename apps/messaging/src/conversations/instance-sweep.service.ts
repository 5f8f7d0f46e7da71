import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, IntervalTask, LOGGER, tryWithAdvisoryLock, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { MessagingConfig } from '../messaging.config.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { InstancesService } from './instances.service.js';

/**
 * The hourly pass (seed 004 "Idle closing"): close idle instances, retry missing summaries, and
 * prune the real-time feed. Runs alone across replicas (advisory lock).
 */
@Injectable()
export class InstanceSweepService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly task: IntervalTask;

  constructor(
    private readonly instances: InstancesService,
    private readonly stream: StreamRepository,
    private readonly uow: UnitOfWork,
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    // The steps log their own failures (runOnce); what reaches onError is the advisory lock's (the database gone).
    this.task = new IntervalTask({
      everyMs: config.INSTANCE_SWEEP_INTERVAL_MS,
      run: () => this.runOnce(),
      onError: (err) => this.logger.error({ event: 'messaging.instance_sweep_failed', err: err.message }, 'instance sweep failed'),
    });
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  onModuleDestroy(): Promise<void> {
    return this.task.stop();
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
