import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { createLogger, PinoNestLogger } from '@touchpoint/observability';
import { SandboxConfig } from './sandbox.config.js';
import { SandboxModule } from './sandbox.module.js';

/** Starts the sandbox on PORT; used by `npm start` and the end-to-end tests. */
export async function startSandbox(config: SandboxConfig): Promise<NestFastifyApplication> {
  const logger = createLogger('sandbox', config.LOG_LEVEL);
  const app = await NestFactory.create<NestFastifyApplication>(SandboxModule.forRoot(config), new FastifyAdapter({ bodyLimit: 16 * 1024 * 1024 }), {
    logger: new PinoNestLogger(logger),
  });
  app.enableShutdownHooks();
  await app.listen(config.PORT, config.HOST);
  logger.info({ event: 'service.started', url: await app.getUrl() }, 'sandbox ready');
  return app;
}
