import { type DynamicModule, Module } from '@nestjs/common';
import type { SandboxConfig } from '../sandbox.config.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { UnipileControlController } from './unipile-control.controller.js';
import { UnipileController } from './unipile.controller.js';
import { UNIPILE_SANDBOX_CONFIG, UnipileStateService } from './unipile-state.service.js';

/** The Unipile (API v1, LinkedIn) stand-in: invite, chats, webhooks with the shared secret, its controls. */
@Module({})
export class UnipileSandboxModule {
  static forRoot(config: SandboxConfig): DynamicModule {
    return {
      module: UnipileSandboxModule,
      imports: [WebhooksModule],
      controllers: [UnipileController, UnipileControlController],
      providers: [{ provide: UNIPILE_SANDBOX_CONFIG, useValue: config }, UnipileStateService],
      exports: [UnipileStateService],
    };
  }
}
