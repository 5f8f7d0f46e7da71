import { type DynamicModule, Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import type { SandboxConfig } from '../sandbox.config.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { MetaControlController } from './meta-control.controller.js';
import { MetaController } from './meta.controller.js';
import { MetaNumbersService } from './meta-numbers.service.js';
import { MetaServiceWindowService } from './meta-service-window.service.js';
import { META_SANDBOX_CONFIG, MetaWebhooksService } from './meta-webhooks.service.js';

/** The Meta (WhatsApp Cloud API) stand-in: Graph endpoints, signed webhooks, its controls. */
@Module({})
export class MetaSandboxModule implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  static forRoot(config: SandboxConfig): DynamicModule {
    return {
      module: MetaSandboxModule,
      imports: [WebhooksModule],
      controllers: [MetaController, MetaControlController],
      providers: [{ provide: META_SANDBOX_CONFIG, useValue: config }, MetaWebhooksService, MetaNumbersService, MetaServiceWindowService],
      exports: [MetaWebhooksService],
    };
  }

  /** Graph's media upload is multipart/form-data: keep the raw bytes (the sandbox only counts them). */
  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (fastify && !fastify.hasContentTypeParser('multipart/form-data')) {
      fastify.addContentTypeParser('multipart/form-data', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    }
  }
}
