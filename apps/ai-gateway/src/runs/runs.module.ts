import { Module } from '@nestjs/common';
import { BudgetModule } from '../budget/budget.module.js';
import { ModelProvider } from '../provider/model-provider.js';
import { OpenAiModelProvider } from '../provider/openai-model.provider.js';
import { RunsController } from './runs.controller.js';
import { RunsMetrics } from './runs.metrics.js';
import { RunsRepository } from './runs.repository.js';
import { RunsService } from './runs.service.js';

/** `ai.run`: idempotent runs over the configured model provider. */
@Module({
  imports: [BudgetModule],
  controllers: [RunsController],
  providers: [RunsRepository, RunsService, RunsMetrics, { provide: ModelProvider, useClass: OpenAiModelProvider }],
})
export class RunsModule {}
