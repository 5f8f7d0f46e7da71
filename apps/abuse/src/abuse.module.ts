import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { AbuseConfig } from './abuse.config.js';
import { AbuseController } from './check/abuse.controller.js';
import { AbuseRepository } from './check/abuse.repository.js';
import { AbuseCheckService } from './check/abuse-check.service.js';
import { AbuseEntities, AbuseMigrations } from './migrations/index.js';
import { ExpiryService } from './penalties/expiry.service.js';

/** Options a test passes to stand the service at a chosen instant. */
export interface AbuseModuleOptions {
  clock?: Clock;
}

/** The abuse service: rate limits, patterns and penalties (seed 004, DESIGN §4). */
@Module({})
export class AbuseModule {
  static forRoot(config: AbuseConfig, options: AbuseModuleOptions = {}): DynamicModule {
    const providers: Provider[] = [AbuseRepository, AbuseCheckService, ExpiryService];
    if (options.clock) providers.push({ provide: Clock, useValue: options.clock });
    return {
      module: AbuseModule,
      imports: [PlatformModule.forService({ service: 'abuse', config, entities: AbuseEntities, migrations: AbuseMigrations })],
      controllers: [AbuseController],
      providers,
    };
  }
}
