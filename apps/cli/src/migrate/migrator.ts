import { Inject, Injectable } from '@nestjs/common';
import { SERVICE_SCHEMA, SERVICES, type ServiceName } from '@touchpoint/contracts';
import { BUS_MIGRATIONS, createServiceDataSource, migrateServiceSchema } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { withAdvisoryLock } from '@touchpoint/runtime';
import type { CliConfig } from '../cli.config.js';
import { CLI_CONFIG } from '../cli.tokens.js';
import { CLI_LOGGER } from '../output/cli-logger.js';
import { SERVICE_MIGRATIONS } from './service-migrations.js';

/**
 * Runs services' migrations the way each service does at start-up: schema created if missing,
 * the bus tables first, then the service's own, one transaction each, under the same advisory
 * lock (`migrate:<schema>`), so a migrate racing a starting replica runs nothing twice.
 */
@Injectable()
export class Migrator {
  constructor(
    @Inject(CLI_CONFIG) private readonly config: CliConfig,
    @Inject(CLI_LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Migrates `services` (all when empty), in the order of SERVICES.
   * @returns per service, the names of the migrations this run applied (empty when up to date)
   */
  async migrate(services: ServiceName[] = []): Promise<Partial<Record<ServiceName, string[]>>> {
    const chosen = services.length ? SERVICES.filter((s) => services.includes(s)) : [...SERVICES];
    const migrated: Partial<Record<ServiceName, string[]>> = {};
    for (const service of chosen) {
      const schema = `${this.config.DB_SCHEMA_PREFIX}${SERVICE_SCHEMA[service]}`;
      const dataSource = createServiceDataSource({
        url: this.config.DATABASE_URL,
        schema,
        entities: [],
        migrations: [...BUS_MIGRATIONS, ...SERVICE_MIGRATIONS[service]],
        poolSize: 2,
      });
      await dataSource.initialize();
      try {
        migrated[service] = await withAdvisoryLock(dataSource, `migrate:${schema}`, () => migrateServiceSchema(dataSource));
        this.logger.info({ event: 'database.migrated', schema, migrations: migrated[service] }, 'migrations applied');
      } finally {
        await dataSource.destroy();
      }
    }
    return migrated;
  }
}
