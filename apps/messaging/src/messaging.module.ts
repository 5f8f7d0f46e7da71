import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import type { MessagingConfig } from './messaging.config.js';
import { MessagingEntities, MessagingMigrations } from './migrations/index.js';

/** The messaging service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class MessagingModule {
  static forRoot(config: MessagingConfig): DynamicModule {
    return {
      module: MessagingModule,
      imports: [PlatformModule.forService({ service: 'messaging', config, entities: MessagingEntities, migrations: MessagingMigrations })],
    };
  }
}
