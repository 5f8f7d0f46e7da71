import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import type { AbuseConfig } from './abuse.config.js';
import { AbuseEntities, AbuseMigrations } from './migrations/index.js';

/** The abuse service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class AbuseModule {
  static forRoot(config: AbuseConfig): DynamicModule {
    return {
      module: AbuseModule,
      imports: [PlatformModule.forService({ service: 'abuse', config, entities: AbuseEntities, migrations: AbuseMigrations })],
    };
  }
}
