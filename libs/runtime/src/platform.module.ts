import { type DynamicModule, Global, Module } from '@nestjs/common';
import { APP_FILTER, DiscoveryModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SERVICE_SCHEMA } from '@touchpoint/contracts';
import { BUS_MIGRATIONS, createServiceDataSource, migrateServiceSchema } from '@touchpoint/database';
import { createLogger, Metrics } from '@touchpoint/observability';
import { Clock } from '@touchpoint/time';
import { BusService } from './bus.service.js';
import { AllErrorsFilter } from './error-filter.js';
import { HealthController } from './health.controller.js';
import { OwnedReferences } from './owned-references.js';
import { RpcClient } from './rpc.js';
import { APP_CONFIG, LOGGER, SERVICE_DEFINITION, type ServiceDefinition, schemaOf } from './tokens.js';
import { UnitOfWork } from './unit-of-work.js';
import { withAdvisoryLock } from './locks.js';
import { PlatformRpcController } from './platform-rpc.controller.js';

/**
 * Everything a Touchpoint service shares: config, logger, metrics, clock, its database (schema
 * created and migrated before anything else starts), the bus, RPC client, the error filter, and
 * the health and metrics routes. Global, so features just inject what they need.
 */
@Global()
@Module({})
export class PlatformModule {
  static forService(definition: ServiceDefinition): DynamicModule {
    const logger = createLogger(definition.service, definition.config.LOG_LEVEL);
    const schema = schemaOf(SERVICE_SCHEMA[definition.service], definition.config);
    return {
      module: PlatformModule,
      imports: [
        DiscoveryModule,
        TerminusModule.forRoot({ errorLogStyle: 'json', logger: false }),
        TypeOrmModule.forRootAsync({
          useFactory: () => ({}),
          dataSourceFactory: async () => {
            const dataSource = createServiceDataSource({
              url: definition.config.DATABASE_URL,
              schema,
              entities: definition.entities,
              migrations: [...BUS_MIGRATIONS, ...definition.migrations],
              poolSize: definition.config.DB_POOL_SIZE,
            });
            await dataSource.initialize();
            // Replicas starting together must not run the same migration twice.
            const ran = await withAdvisoryLock(dataSource, `migrate:${schema}`, () => migrateServiceSchema(dataSource));
            if (ran.length) logger.info({ event: 'database.migrated', schema, migrations: ran }, 'migrations applied');
            return dataSource;
          },
        }),
      ],
      controllers: [HealthController, PlatformRpcController],
      providers: [
        { provide: SERVICE_DEFINITION, useValue: definition },
        { provide: APP_CONFIG, useValue: definition.config },
        { provide: LOGGER, useValue: logger },
        { provide: Metrics, useValue: new Metrics(definition.service) },
        { provide: APP_FILTER, useClass: AllErrorsFilter },
        Clock,
        UnitOfWork,
        BusService,
        RpcClient,
        OwnedReferences,
      ],
      exports: [SERVICE_DEFINITION, APP_CONFIG, LOGGER, Metrics, Clock, UnitOfWork, BusService, RpcClient, OwnedReferences],
    };
  }
}
