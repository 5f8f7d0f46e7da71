import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import type { FollowupsConfig } from './followups.config.js';
import { FollowupsEntities, FollowupsMigrations } from './migrations/index.js';

/** The followups service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class FollowupsModule {
  static forRoot(config: FollowupsConfig): DynamicModule {
    return {
      module: FollowupsModule,
      imports: [PlatformModule.forService({ service: 'followups', config, entities: FollowupsEntities, migrations: FollowupsMigrations })],
    };
  }
}
