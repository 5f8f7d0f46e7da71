import { Module } from '@nestjs/common';
import { ModelControlController } from './model-control.controller.js';
import { ModelController } from './model.controller.js';
import { ModelStateService } from './model-state.service.js';

/** The sandbox's OpenAI-compatible model endpoint and its control routes. */
@Module({
  controllers: [ModelController, ModelControlController],
  providers: [ModelStateService],
  exports: [ModelStateService],
})
export class ModelSandboxModule {}
