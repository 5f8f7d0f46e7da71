import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SERVICE_SCHEMA } from '@touchpoint/contracts';
import { createServiceDataSource } from '@touchpoint/database';
import { GatewayEntities, GatewayMigrations } from '../../../gateway/src/migrations/index.js';
import type { CliConfig } from '../cli.config.js';
import { CLI_CONFIG } from '../cli.tokens.js';

/**
 * The gateway schema's data source for the tenancy commands. Connected on first use, so commands
 * that never touch the database (dlq:*) do not need it up; never migrates on its own (`migrate`
 * does).
 */
@Injectable()
export class GatewayDatabase implements OnApplicationShutdown {
  readonly dataSource: DataSource;

  constructor(@Inject(CLI_CONFIG) config: CliConfig) {
    this.dataSource = createServiceDataSource({
      url: config.DATABASE_URL,
      schema: `${config.DB_SCHEMA_PREFIX}${SERVICE_SCHEMA.gateway}`,
      entities: GatewayEntities,
      migrations: GatewayMigrations,
      poolSize: 2,
    });
  }

  /** Connects if not connected yet. */
  async connect(): Promise<void> {
    if (!this.dataSource.isInitialized) await this.dataSource.initialize();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
