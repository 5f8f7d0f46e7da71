import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import type { OutboxDispatcherConfig } from './outbox-dispatcher.config.js';
import { OutboxDispatcherEntities, OutboxDispatcherMigrations } from './migrations/index.js';

/** The outbox-dispatcher service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class OutboxDispatcherModule {
  static forRoot(config: OutboxDispatcherConfig): DynamicModule {
    return {
      module: OutboxDispatcherModule,
      imports: [PlatformModule.forService({ service: 'outbox-dispatcher', config, entities: OutboxDispatcherEntities, migrations: OutboxDispatcherMigrations })],
    };
  }
}
