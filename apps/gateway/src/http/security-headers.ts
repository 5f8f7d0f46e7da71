import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

/** What `helmet` is asked for; see installSecurityHeaders. */
const HELMET_OPTIONS: HelmetOptions = {
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  contentSecurityPolicy: {
    useDefaults: true,
    directives: { 'frame-ancestors': ["'none'"], 'upgrade-insecure-requests': null },
  },
};

/**
 * The headers `helmet(options)` sets on an answer, as `[name, value]` pairs in the order it sets
 * them (`['Content-Security-Policy', "default-src 'self';…"]`, …, `['X-Frame-Options', 'DENY']`),
 * found by running its middleware once on a stand-in response. Its `X-Powered-By` removal is left
 * out: nothing of ours sets that header. `options` must not depend on the request (no CSP nonce, no
 * directive given as a function): the middleware runs once, on no request.
 * @throws Error when helmet refuses the options (an invalid CSP directive)
 */
export function helmetHeaders(options: HelmetOptions): [string, string][] {
  const headers: [string, string][] = [];
  const recorder = {
    setHeader: (name: string, value: string) => headers.push([name, value]),
    removeHeader: () => undefined,
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (err) => {
    if (err) throw err;
  });
  return headers;
}

/**
 * Security headers of every gateway answer, made by `helmet`: `X-Content-Type-Options: nosniff`,
 * `X-Frame-Options: DENY` and CSP `frame-ancestors 'none'` (no page of ours, the Swagger UI at
 * /docs included, can be framed), `Referrer-Policy: no-referrer`, and a CSP that allows what the
 * Swagger UI loads (its own scripts and styles from the same origin, inline styles, data: images),
 * beside helmet's other defaults (HSTS, the Cross-Origin-* policies, ...). `upgrade-insecure-requests`
 * is left out: a laptop serves /docs over plain http.
 *
 * The header set does not depend on the request, so it is computed once here (`helmetHeaders`) and
 * only copied onto each response in an `onRequest` hook, on the raw response as helmet's middleware
 * does, so a header an answer sets itself (the console's stricter CSP) still replaces ours. Not
 * `@fastify/helmet`: it builds helmet's middleware again, CSP parsing included, for every request.
 *
 * API answers also get `Cache-Control: no-store` (they hold tenant data a shared cache must not
 * keep); an answer that sets its own (the static assets of the docs UI) keeps it.
 */
export function installSecurityHeaders(fastify: FastifyInstance): void {
  const headers = helmetHeaders(HELMET_OPTIONS);
  fastify.addHook('onRequest', (_request, reply, done) => {
    for (const [name, value] of headers) reply.raw.setHeader(name, value);
    done();
  });
  fastify.addHook('onSend', (_request, reply, payload, done) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });
}
