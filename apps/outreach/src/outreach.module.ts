import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import type { OutreachConfig } from './outreach.config.js';
import { OutreachEntities, OutreachMigrations } from './migrations/index.js';

/** The outreach service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class OutreachModule {
  static forRoot(config: OutreachConfig): DynamicModule {
    return {
      module: OutreachModule,
      imports: [PlatformModule.forService({ service: 'outreach', config, entities: OutreachEntities, migrations: OutreachMigrations })],
    };
  }
}
