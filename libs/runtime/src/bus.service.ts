import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { BUS_BATCH_PREPARER, BUS_HANDLER, BUS_HANDLER_FILTER, type BusBatchPreparer, BusConnection, type BusHandler, type BusMessageFilter, OutboxRelay } from '@touchpoint/bus';
import { type BusMessage, SERVICE_SCHEMA } from '@touchpoint/contracts';
import { type Logger, Metrics } from '@touchpoint/observability';
import { LOGGER, SERVICE_DEFINITION, type ServiceDefinition, schemaOf } from './tokens.js';

/**
 * The service's bus: discovers `@OnBusMessage` handlers, consumes them, and runs the outbox relay
 * for the service's schema. Started after the app has bootstrapped, closed on shutdown.
 */
@Injectable()
export class BusService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly connection: BusConnection;
  readonly relay: OutboxRelay;

  constructor(
    @Inject(SERVICE_DEFINITION) private readonly definition: ServiceDefinition,
    @Inject(LOGGER) private readonly logger: Logger,
    dataSource: DataSource,
    metrics: Metrics,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {
    const { config, service } = definition;
    const schema = schemaOf(SERVICE_SCHEMA[service], config);
    this.connection = new BusConnection(
      {
        service,
        schema,
        amqpUrl: config.AMQP_URL,
        namespace: config.BUS_NAMESPACE,
        maxAttempts: config.BUS_MAX_ATTEMPTS,
        retryBaseMs: config.BUS_RETRY_BASE_MS,
        prefetch: config.BUS_PREFETCH,
        batchSize: config.BUS_CONSUMER_BATCH,
        packSize: config.BUS_PACK_SIZE,
        batchLockTimeoutMs: config.BUS_BATCH_LOCK_TIMEOUT_MS,
        // Leave half the pool to requests, loops and the relay.
        transactionSlots: Math.max(1, Math.floor(config.DB_POOL_SIZE / 2)),
        queueType: config.BUS_QUEUE_TYPE,
      },
      dataSource,
      logger,
      metrics,
    );
    this.relay = new OutboxRelay({ schema, databaseUrl: config.DATABASE_URL }, dataSource, this.connection, logger, metrics);
  }

  async onApplicationBootstrap(): Promise<void> {
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object' || !wrapper.metatype) continue;
      const prototype = Object.getPrototypeOf(instance);
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        for (const batchType of this.reflector.get<string[] | undefined>(BUS_BATCH_PREPARER, prototype[method]) ?? []) {
          this.connection.addBatchPreparer(batchType, (instance[method] as BusBatchPreparer).bind(instance));
        }
        const type = this.reflector.get<string | undefined>(BUS_HANDLER, prototype[method]);
        if (!type) continue;
        const fn = (instance[method] as BusHandler).bind(instance);
        const when = this.reflector.get<BusMessageFilter | undefined>(BUS_HANDLER_FILTER, prototype[method]);
        this.connection.addHandler(type, `${wrapper.metatype.name}.${method}`, fn, { when });
      }
    }
    await this.connection.waitForConnect();
    await this.connection.startConsuming();
    this.relay.start();
    this.logger.info({ event: 'bus.started', handles: this.connection.handledTypes }, 'bus started');
  }

  /** Sends a wake-up to this service's own queue after `delayMs` (see BusConnection.publishDelayed). */
  publishDelayed(message: BusMessage, delayMs: number): Promise<void> {
    return this.connection.publishDelayed(message, delayMs);
  }

  /** Runs before the data source is destroyed (TypeORM closes it on application shutdown). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.relay.stop();
    await this.connection.close();
  }
}
