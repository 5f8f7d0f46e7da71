import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { Counter, Histogram } from 'prom-client';
import { METRIC_PREFIX, type Logger, type Metrics } from '@touchpoint/observability';

/** What every log line written while serving a request carries. */
export interface RequestContext {
  request_id: string;
  /** Set by the auth guard once the API key is known. */
  organization_id?: string;
}

/** The context of the request being served (undefined outside a request). */
export const requestContext = new AsyncLocalStorage<RequestContext>();

type WithContext = FastifyRequest & { touchpointContext?: RequestContext };

/** Probe and scrape routes: logged at debug, or every scrape would fill the access log. */
const QUIET_ROUTES = new Set(['/health/live', '/health/ready', '/metrics']);

/**
 * What the access log shows of a request's target: the route template (never the path, which may
 * hold a phone number or a token) and the query's parameter names with every value redacted (the
 * Meta verify token, an unsubscribe token, search text and keys travel there).
 * `/webhooks/meta?hub.mode=…&hub.verify_token=…` → `/webhooks/meta?hub.mode=[redacted]&hub.verify_token=[redacted]`.
 */
export function loggedTarget(route: string, url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return route;
  const names = [...new URLSearchParams(url.slice(at + 1)).keys()];
  return names.length ? `${route}?${names.map((name) => `${encodeURIComponent(name)}=[redacted]`).join('&')}` : route;
}

/**
 * Request id and logging (DESIGN §8): every request runs in an AsyncLocalStorage context
 * holding its `request_id` (the caller's `x-request-id` when well-formed, else a new uuid; see
 * libs/runtime bootstrap), every pino line written meanwhile carries it (and `organization_id`
 * once known), and one access-log line is written per request (`http.request`: method, route,
 * `url` as `loggedTarget` makes it, status, ms, organization_id).
 */
export function installRequestContext(fastify: FastifyInstance, logger: Logger, metrics: Metrics): void {
  // pino's documented symbols for library authors: add a mixin to the process logger (and thus its
  // children) without owning its creation. The copy matters: pino merges fields into what it gets.
  (logger as unknown as Record<symbol, unknown>)[pino.symbols.mixinSym] = () => {
    const store = requestContext.getStore();
    return store ? { ...store } : {};
  };

  const requests = new Counter({
    name: `${METRIC_PREFIX}http_requests_total`,
    help: 'HTTP requests answered by the gateway, by method, route template and status',
    labelNames: ['method', 'route', 'status'],
    registers: [metrics.registry],
  });
  const duration = new Histogram({
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: 'Time to answer an HTTP request at the gateway, seconds',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [metrics.registry],
  });

  fastify.addHook('onRequest', (request, _reply, done) => {
    const store: RequestContext = { request_id: request.id };
    (request as WithContext).touchpointContext = store;
    requestContext.run(store, done);
  });
  // Body parsing runs on stream events outside the context; enter it again for guards and handlers.
  fastify.addHook('preHandler', (request, _reply, done) => {
    const store = (request as WithContext).touchpointContext;
    if (store) requestContext.run(store, done);
    else done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const store = (request as WithContext).touchpointContext;
    const route = request.routeOptions?.url ?? 'unmatched';
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    const line = { event: 'http.request', request_id: request.id, organization_id: store?.organization_id, method: request.method, route, url: loggedTarget(route, request.url), status: reply.statusCode, ms };
    if (QUIET_ROUTES.has(route)) logger.debug(line, 'request');
    else logger.info(line, 'request');
    done();
  });
}

/** Notes the caller's organization on the current request's context (log lines that follow carry it). */
export function noteOrganization(organizationId: string): void {
  const store = requestContext.getStore();
  if (store) store.organization_id = organizationId;
}
