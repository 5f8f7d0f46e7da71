import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { Metrics } from '@touchpoint/observability';
import type { ServiceConfig } from '@touchpoint/config';
import { BusService } from './bus.service.js';
import { APP_CONFIG } from './tokens.js';

/**
 * Kubernetes probes (DESIGN §8). Live: the process answers. Ready: the database answers, the
 * broker connection is up, and the outbox relay is not behind by more than RELAY_MAX_LAG_MS.
 */
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    private readonly bus: BusService,
    private readonly metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: ServiceConfig,
  ) {}

  @Get('health/live')
  @HealthCheck()
  live() {
    return this.health.check([async () => this.indicators.check('process').up({ uptime_s: Math.round(process.uptime()) })]);
  }

  @Get('health/ready')
  @HealthCheck()
  ready() {
    return this.health.check([
      async () => {
        const db = this.indicators.check('database');
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            this.dataSource.query('SELECT 1'),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error('timeout')), 2000);
            }),
          ]);
          return db.up();
        } catch (err) {
          return db.down({ message: (err as Error).message });
        } finally {
          // Otherwise every probe leaves a 2 s timer behind (and keeps a stopping process alive).
          clearTimeout(timer);
        }
      },
      async () => {
        const broker = this.indicators.check('broker');
        return this.bus.connection.isConnected() ? broker.up() : broker.down({ message: 'not connected' });
      },
      async () => {
        const relay = this.indicators.check('relay');
        const lagMs = Math.round(this.bus.relay.lag * 1000);
        return lagMs <= this.config.RELAY_MAX_LAG_MS ? relay.up({ lag_ms: lagMs }) : relay.down({ lag_ms: lagMs, max_lag_ms: this.config.RELAY_MAX_LAG_MS });
      },
    ]);
  }

  /** Prometheus exposition of this process's registry. */
  @Get('metrics')
  async metricsText(@Res() reply: { header(k: string, v: string): unknown; send(body: string): unknown }): Promise<void> {
    reply.header('content-type', this.metrics.registry.contentType);
    reply.send(await this.metrics.registry.metrics());
  }
}
