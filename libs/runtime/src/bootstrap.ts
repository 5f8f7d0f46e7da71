import 'reflect-metadata';
import type { DynamicModule, INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ConfigError } from '@touchpoint/config';
import { ErrorCode } from '@touchpoint/errors';
import { createLogger, type Logger, PinoNestLogger } from '@touchpoint/observability';
import { BusService } from './bus.service.js';
import { parseJsonBody } from './json-body.js';
import { rpcServerOptions, TouchpointRmqServer } from './rpc.js';
import { LOGGER, SERVICE_DEFINITION, type ServiceDefinition } from './tokens.js';
import { redact } from '@touchpoint/bus';

/**
 * The headers of an error answer written before any hook ran (so before the gateway's helmet):
 * an error body is never framed, sniffed, cached or referred from, whatever layer refused it.
 */
const EARLY_ERROR_HEADERS: readonly [string, string][] = [
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['content-security-policy', "default-src 'none'; frame-ancestors 'none'"],
  ['referrer-policy', 'no-referrer'],
  ['cache-control', 'no-store'],
];

/**
 * Answers what Fastify's router refuses before any hook or route runs (a path parameter over
 * `maxParamLength`, a URL that cannot be decoded) with our envelope and the request's id, as every
 * other answer: Fastify's own body and a reply without `x-request-id` would escape both.
 */
function answerRouterError(error: { code?: string }, request: { id: string }, reply: { code(status: number): unknown; header(name: string, value: string): unknown; send(body: unknown): unknown }): void {
  const [status, code, message] = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? [414, ErrorCode.UriTooLong, 'a path parameter is too long'] : error.code === 'FST_ERR_BAD_URL' ? [400, ErrorCode.MalformedRequest, 'the URL is not valid'] : [500, ErrorCode.Internal, 'internal error'];
  reply.code(status);
  // No hook ran (the gateway's security headers included): set what an error body needs here.
  reply.header('x-request-id', request.id);
  reply.header('content-type', 'application/json; charset=utf-8');
  for (const [name, value] of EARLY_ERROR_HEADERS) reply.header(name, value);
  reply.send({ error: { code, message } });
}

export interface StartOptions {
  /** Largest accepted request body, bytes (default 1 MiB). */
  bodyLimit?: number;
  /** Called with the Fastify app before listening (plugins, raw-body parsers, docs). */
  configure?: (app: NestFastifyApplication) => Promise<void> | void;
  /**
   * Requests whose URL starts with one of these (`'/webhooks/'`) keep the exact bytes of their JSON
   * body as `request.rawBody` (a Buffer), for signature checks. It is the buffer the JSON parser
   * reads, not a copy. Default: none.
   */
  rawBodyPathPrefixes?: readonly string[];
}

/**
 * Answers a request Node's HTTP parser refused before any route saw it (headers over the size
 * limit, a request that timed out, malformed HTTP) with our error envelope instead of Fastify's
 * own body, then closes the connection as Node does. The request was never parsed, so its
 * `x-request-id` is a new one.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, ErrorCode.HeadersTooLarge, 'the request headers are too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, ErrorCode.RequestTimeout, 'the request did not arrive in time']
        : [400, ErrorCode.MalformedRequest, 'the request is not valid HTTP'];
  const requestId = randomUUID();
  const body = JSON.stringify({ error: { code, message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\n${EARLY_ERROR_HEADERS.map(([name, value]) => `${name}: ${value}\r\n`).join('')}Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/**
 * Creates, wires and starts a service: HTTP on PORT (Fastify), the RPC server on its queue, the bus
 * consumer and relay. Resolves once it is listening and consuming.
 */
export async function startService(rootModule: DynamicModule, options: StartOptions = {}): Promise<NestFastifyApplication> {
  const bodyLimit = options.bodyLimit ?? 1024 * 1024;
  const adapter = new FastifyAdapter({
    bodyLimit,
    clientErrorHandler: answerClientError,
    frameworkErrors: answerRouterError as never,
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(rootModule, adapter, { bufferLogs: true, abortOnError: false });
  const definition = app.get<ServiceDefinition>(SERVICE_DEFINITION);
  const logger = app.get<Logger>(LOGGER);
  app.useLogger(new PinoNestLogger(logger));
  app.enableShutdownHooks();
  const rawBodyPrefixes = options.rawBodyPathPrefixes ?? [];
  // Ours instead of Fastify's: an empty body is no body, a forbidden key is a named field (json-body.ts).
  app.useBodyParser('application/json', { bodyLimit }, (request, body, done) => {
    if (rawBodyPrefixes.some((prefix) => request.url.startsWith(prefix))) (request as { rawBody?: Buffer }).rawBody = body;
    let parsed: unknown;
    try {
      parsed = parseJsonBody(body);
    } catch (err) {
      done(err as Error, undefined);
      return;
    }
    done(null, parsed);
  });
  const fastify = app.getHttpAdapter().getInstance();
  fastify.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
  await options.configure?.(app);
  if (definition.rpc !== false) {
    const bus = app.get(BusService);
    app.connectMicroservice(
      {
        strategy: new TouchpointRmqServer(rpcServerOptions(definition.config, definition.service), (content, properties, reason) => bus.connection.deadLetterRaw(content, properties, reason, `rpc request with no handler in ${definition.service}`)),
      },
      { inheritAppConfig: true },
    );
    await app.startAllMicroservices();
  }
  await app.listen(definition.config.PORT, definition.config.HOST);
  logger.info({ event: 'service.started', url: await app.getUrl() }, `${definition.service} ready`);
  return app;
}

/**
 * Entry point helper for `main.ts`: runs `start`, and turns a start-up failure into one clear line
 * on stderr naming what is wrong (bad config, database or broker unreachable) and exit code 1.
 */
export async function runMain(service: string, start: () => Promise<INestApplication>): Promise<void> {
  try {
    await start();
  } catch (err) {
    const logger = createLogger(service);
    logger.fatal({ event: 'service.start_failed', err: describeStartError(err) }, `${service} could not start`);
    process.stderr.write(`${service}: ${describeStartError(err)}\n`);
    process.exit(1);
  }
}

/** A one-line, actionable reason for a start-up failure. */
export function describeStartError(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  const e = err as { code?: string; message?: string; address?: string; port?: number };
  if (e?.code === 'ECONNREFUSED' && e.port === 5432) return `PostgreSQL is not reachable at ${e.address}:${e.port} (start it, or set DATABASE_URL)`;
  if (e?.message?.includes('broker not reachable')) return `${e.message} (start RabbitMQ, or set AMQP_URL)`;
  return e?.message ?? String(err);
}

export { redact };
