import helmet from '@fastify/helmet';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

/**
 * Security headers of every gateway answer, set by `@fastify/helmet`: `X-Content-Type-Options:
 * nosniff`, `X-Frame-Options: DENY` and CSP `frame-ancestors 'none'` (no page of ours, the Swagger
 * UI at /docs included, can be framed), `Referrer-Policy: no-referrer`, and a CSP that allows what
 * the Swagger UI loads (its own scripts and styles from the same origin, inline styles, data:
 * images). `upgrade-insecure-requests` is left out: a laptop serves /docs over plain http.
 *
 * API answers also get `Cache-Control: no-store` (they hold tenant data a shared cache must not
 * keep); an answer that sets its own (the static assets of the docs UI) keeps it.
 */
export async function installSecurityHeaders(app: NestFastifyApplication): Promise<void> {
  await app.register(helmet as never, {
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    contentSecurityPolicy: {
      useDefaults: true,
      directives: { 'frame-ancestors': ["'none'"], 'upgrade-insecure-requests': null },
    },
  });
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onSend', async (_request, reply, payload) => {
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
      return payload;
    });
}
