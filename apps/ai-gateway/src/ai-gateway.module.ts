import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import type { AiGatewayConfig } from './ai-gateway.config.js';
import { AiGatewayEntities, AiGatewayMigrations } from './migrations/index.js';

/** The ai-gateway service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class AiGatewayModule {
  static forRoot(config: AiGatewayConfig): DynamicModule {
    return {
      module: AiGatewayModule,
      imports: [PlatformModule.forService({ service: 'ai-gateway', config, entities: AiGatewayEntities, migrations: AiGatewayMigrations })],
    };
  }
}
