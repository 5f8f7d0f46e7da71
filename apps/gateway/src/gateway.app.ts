import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { type Logger, Metrics } from '@touchpoint/observability';
import { LOGGER, startService, type StartOptions } from '@touchpoint/runtime';
import type { GatewayConfig } from './gateway.config.js';
import { GatewayModule } from './gateway.module.js';
import { setupOpenApi } from './http/openapi.js';
import { requireJsonBodies } from './http/content-type.js';
import { installRequestContext } from './http/request-context.js';
import { refuseUnstorableCharacters } from './http/unstorable-characters.js';
import { repairUnstorableCharacters } from './http/well-formed-body.js';
import { installSecurityHeaders } from './http/security-headers.js';
import { consoleDirOf, serveConsole } from './http/console-static.js';

/** Paths whose requests keep their raw body bytes (`request.rawBody`) for signature checks. */
export const RAW_BODY_PATH_PREFIXES = ['/webhooks/'];

/**
 * How the gateway's HTTP server is set up on top of the shared bootstrap: body limit, request
 * context and access log, security headers, JSON-only bodies, raw bodies for webhooks, no NUL
 * characters or lone surrogates outside the webhooks, well-formed text in the webhooks' bodies, OpenAPI at /docs, the operator console at
 * /console. Tests pass these to
 * `world.start(GatewayModule.forRoot(config), gatewayStartOptions(config))`.
 */
export function gatewayStartOptions(config: GatewayConfig): StartOptions {
  return {
    bodyLimit: config.BODY_LIMIT_BYTES,
    rawBodyPathPrefixes: RAW_BODY_PATH_PREFIXES,
    configure: async (app: NestFastifyApplication) => {
      const fastify = app.getHttpAdapter().getInstance();
      const logger = app.get<Logger>(LOGGER);
      installRequestContext(fastify, logger, app.get(Metrics));
      installSecurityHeaders(fastify);
      requireJsonBodies(fastify);
      // Refusal first: a REST body with a lone surrogate is refused, not repaired; webhooks are repaired.
      refuseUnstorableCharacters(fastify, RAW_BODY_PATH_PREFIXES);
      repairUnstorableCharacters(fastify, RAW_BODY_PATH_PREFIXES);
      await setupOpenApi(app, logger, { port: config.PORT, unipileHeader: config.UNIPILE_WEBHOOK_HEADER });
      await serveConsole(app, logger, { dir: consoleDirOf(config.CONSOLE_DIR) });
    },
  };
}

/** Starts the gateway with its routes; resolves once it listens and consumes. */
export function startGateway(config: GatewayConfig): Promise<NestFastifyApplication> {
  return startService(GatewayModule.forRoot(config), gatewayStartOptions(config));
}
