import { type DynamicModule, Module } from '@nestjs/common';
import type { SandboxConfig } from '../sandbox.config.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { NylasControlController } from './nylas-control.controller.js';
import { NylasController, NylasGrantsController } from './nylas.controller.js';
import { NYLAS_SANDBOX_CONFIG, NylasStateService } from './nylas-state.service.js';

/** The Nylas v3 stand-in: send and read endpoints, signed notifications, its controls. */
@Module({})
export class NylasSandboxModule {
  static forRoot(config: SandboxConfig): DynamicModule {
    return {
      module: NylasSandboxModule,
      imports: [WebhooksModule],
      controllers: [NylasController, NylasGrantsController, NylasControlController],
      providers: [{ provide: NYLAS_SANDBOX_CONFIG, useValue: config }, NylasStateService],
      exports: [NylasStateService],
    };
  }
}
