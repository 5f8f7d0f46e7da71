import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ErrorCode, type ErrorEnvelope } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';

/** Where the operator console is served (same origin as the API). */
export const CONSOLE_PATH = '/console';

/**
 * The console's Content-Security-Policy: its own scripts, styles, images, fonts and API calls
 * (same origin), nothing inline, nothing from elsewhere, never framed. Stricter than the
 * gateway-wide one, which also lets the Swagger UI use inline styles.
 */
export const CONSOLE_CSP = ["default-src 'self'", "script-src 'self'", "script-src-attr 'none'", "style-src 'self'", "img-src 'self' data:", "font-src 'self'", "connect-src 'self'", "object-src 'none'", "base-uri 'self'", "form-action 'self'", "frame-ancestors 'none'"].join(
  '; ',
);

/** Hashed build assets (`assets/index-3f2a1b.js`): their name changes with their content, so caches may keep them (1 year). */
const ASSET_CACHE = 'public, max-age=31536000, immutable';
/** index.html and the build's other files: revalidate on every load, so a new build is picked up at once. */
const NO_CACHE = 'no-cache';
const NOT_BUILT = 'the operator console is not built: run npm run build (or set CONSOLE_DIR to its build directory)';

/**
 * The console's build directory: CONSOLE_DIR, else `<repo>/dist/console` (the repository root is
 * the nearest folder up from this file with a package-lock.json, in the sources and in dist/ alike).
 */
export function consoleDirOf(configured: string): string {
  if (configured) return path.resolve(configured);
  let dir = import.meta.dirname;
  while (!existsSync(path.join(dir, 'package-lock.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve('dist/console');
    dir = parent;
  }
  return path.join(dir, 'dist', 'console');
}

/**
 * Serves the operator console's build at `/console` with `@fastify/static`: the files of `dir`,
 * `index.html` for `/console`, `/console/` and any unknown `/console/...` path without a file
 * extension (the single-page app's own routes), 404 for a missing file with one. Hashed assets
 * under `/console/assets/` are cached for a year, everything else revalidated. When `dir` has no
 * index.html, every console path answers 503 `service_unavailable` saying to build it; the
 * directory is looked at per request, so a build made after start-up is served without a restart.
 *
 * Jest's module loader cannot load @fastify/static (see setupOpenApi); then index.html is still
 * served and the other files answer 503, saying why. test/gateway/console-static.e2e-spec.ts
 * runs a real gateway process.
 */
export async function serveConsole(app: NestFastifyApplication, logger: Logger, options: { dir: string }): Promise<void> {
  const { dir } = options;
  const fastifyStatic = await import('@fastify/static').then(
    (m) => m.default,
    (err: Error) => {
      logger.warn({ event: 'gateway.console_static_disabled', err: err.message }, 'operator console not served: @fastify/static could not be loaded');
      return undefined;
    },
  );
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  const index = path.join(dir, 'index.html');
  const sendIndex = async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const html = await readFile(index).catch(() => undefined);
    if (!html) return unavailable(reply, NOT_BUILT);
    return reply.header('cache-control', NO_CACHE).type('text/html; charset=utf-8').send(html);
  };

  await fastify.register(
    async (scope) => {
      scope.addHook('onSend', async (_request, reply, payload) => {
        reply.header('content-security-policy', CONSOLE_CSP);
        return payload;
      });
      scope.get('/', sendIndex);
      if (fastifyStatic) {
        await scope.register(fastifyStatic, {
          root: dir,
          prefix: '/',
          decorateReply: false,
          index: false,
          cacheControl: false,
          dotfiles: 'ignore',
          setHeaders: (reply: FastifyReply, file: string) => {
            reply.header('cache-control', path.relative(dir, file).startsWith(`assets${path.sep}`) ? ASSET_CACHE : NO_CACHE);
          },
        } as never);
      }
      scope.setNotFoundHandler(async (request, reply) => {
        const pathname = request.url.split('?')[0]!;
        if (path.posix.extname(pathname) === '' || !existsSync(index)) return sendIndex(request, reply);
        if (!fastifyStatic) return unavailable(reply, 'the files of the operator console cannot be served by this process (@fastify/static could not be loaded)');
        return reply.code(404).send(envelope(ErrorCode.NotFound, `no such file of the operator console: ${pathname}`));
      });
    },
    { prefix: CONSOLE_PATH },
  );
}

function unavailable(reply: FastifyReply, message: string): FastifyReply {
  return reply.code(503).header('cache-control', 'no-store').send(envelope(ErrorCode.ServiceUnavailable, message));
}

function envelope(code: ErrorCode, message: string): ErrorEnvelope {
  return { error: { code, message } };
}
