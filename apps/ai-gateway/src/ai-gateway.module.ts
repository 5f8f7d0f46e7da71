import { type DynamicModule, Module } from '@nestjs/common';
import { PlatformModule } from '@touchpoint/runtime';
import { type AiGatewayConfig, assertAiConfig } from './ai-gateway.config.js';
import { BudgetModule } from './budget/budget.module.js';
import { AiGatewayEntities, AiGatewayMigrations } from './migrations/index.js';
import { PromptsModule } from './prompts/prompts.module.js';
import { RunsModule } from './runs/runs.module.js';

/** The ai-gateway service: wires its features onto the shared platform (DESIGN §4). */
@Module({})
export class AiGatewayModule {
  static forRoot(config: AiGatewayConfig): DynamicModule {
    assertAiConfig(config);
    return {
      module: AiGatewayModule,
      imports: [PlatformModule.forService({ service: 'ai-gateway', config, entities: AiGatewayEntities, migrations: AiGatewayMigrations }), PromptsModule, BudgetModule, RunsModule],
    };
  }
}
