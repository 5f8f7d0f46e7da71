import { Controller, type DynamicModule, Get, Module } from '@nestjs/common';
import type { SandboxConfig } from './sandbox.config.js';
import { ModelSandboxModule } from './model/model.module.js';
import { ControlModule } from './control/control.module.js';
import { MetaSandboxModule } from './meta/meta.module.js';
import { NylasSandboxModule } from './nylas/nylas.module.js';
import { UnipileSandboxModule } from './unipile/unipile.module.js';

/** Injection token of the sandbox's config. */
export const SANDBOX_CONFIG = Symbol('sandbox:config');

@Controller()
class SandboxHealthController {
  @Get('health/live')
  live() {
    return { status: 'ok' };
  }
  @Get('health/ready')
  ready() {
    return { status: 'ok' };
  }
}

/**
 * The sandbox app. Each provider lives in its own folder (`meta/`, `nylas/`, `unipile/`, `model/`)
 * as a module added to `imports` below; `control/` is the fault-scripting API; `webhooks/` is the
 * HTTP client the providers' webhooks share.
 */
@Module({})
export class SandboxModule {
  static forRoot(config: SandboxConfig): DynamicModule {
    return {
      module: SandboxModule,
      global: true,
      imports: [ModelSandboxModule, ControlModule, MetaSandboxModule.forRoot(config), NylasSandboxModule.forRoot(config), UnipileSandboxModule.forRoot(config)],
      controllers: [SandboxHealthController],
      providers: [{ provide: SANDBOX_CONFIG, useValue: config }],
      exports: [SANDBOX_CONFIG],
    };
  }
}
