import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Inject } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { throwError } from 'rxjs';
import { AppError, ErrorCode, type ErrorEnvelope, httpStatusOf } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { isDatabaseUnreachable } from '@touchpoint/database';
import { LOGGER } from './tokens.js';

/** Maps a framework HTTP status to our code. */
function codeOfStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return ErrorCode.ValidationFailed;
    case 401:
      return ErrorCode.Unauthorized;
    case 403:
      return ErrorCode.Forbidden;
    case 404:
      return ErrorCode.RouteNotFound;
    case 405:
      return ErrorCode.MethodNotAllowed;
    case 409:
      return ErrorCode.Conflict;
    case 413:
      return ErrorCode.PayloadTooLarge;
    case 415:
      return ErrorCode.UnsupportedMediaType;
    case 429:
      return ErrorCode.RateLimited;
    case 503:
      return ErrorCode.ServiceUnavailable;
    default:
      return status >= 500 ? ErrorCode.Internal : ErrorCode.ValidationFailed;
  }
}

/**
 * Turns any thrown value into our envelope and a status. Unknown errors become 500
 * `internal_error` with an `error_id` that is also in the log line (STYLE: typed errors).
 */
export function toEnvelope(exception: unknown, logger: Logger, context: Record<string, unknown> = {}): { status: number; body: ErrorEnvelope } {
  if (exception instanceof AppError) return { status: httpStatusOf(exception.code), body: exception.toEnvelope() };
  // Nest's Fastify adapter wraps Fastify's body errors (bad JSON, too large, content type) in an
  // HttpException whose cause is the original: judge those by the original's code.
  const cause = exception instanceof HttpException ? (exception.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string' && cause.code.startsWith('FST_ERR_CTP_')) return toEnvelope(cause, logger, context);
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse() as { message?: unknown; error?: unknown } | string;
    const fromBody = typeof response === 'object' ? AppError.fromEnvelope(response) : undefined;
    if (fromBody) return { status: httpStatusOf(fromBody.code), body: fromBody.toEnvelope() };
    const message = typeof response === 'string' ? response : Array.isArray(response.message) ? response.message.join('; ') : String(response.message ?? exception.message);
    return { status, body: { error: { code: codeOfStatus(status), message } } };
  }
  const fastifyStatus = (exception as { statusCode?: number })?.statusCode;
  const fastifyCode = (exception as { code?: string })?.code;
  if (fastifyCode === 'FST_ERR_CTP_INVALID_JSON_BODY' || fastifyCode === 'FST_ERR_CTP_EMPTY_JSON_BODY' || (exception instanceof SyntaxError && fastifyStatus === 400)) {
    return { status: 400, body: { error: { code: ErrorCode.InvalidJson, message: 'the request body is not valid JSON' } } };
  }
  if (fastifyCode === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { status: 413, body: { error: { code: ErrorCode.PayloadTooLarge, message: 'the request body is too large' } } };
  }
  if (fastifyCode === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { status: 415, body: { error: { code: ErrorCode.UnsupportedMediaType, message: 'unsupported content type' } } };
  }
  if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
    return { status: fastifyStatus, body: { error: { code: codeOfStatus(fastifyStatus), message: (exception as Error).message } } };
  }
  const refused = refusedInput(exception);
  if (refused) {
    logger.warn({ event: 'http.input_refused_by_database', sqlstate: sqlStateOf(exception), ...context }, 'input refused by the database');
    return refused;
  }
  if (isDatabaseUnreachable(exception)) {
    // Out of connections, shutting down, or unreachable: the caller should retry later, not file a bug.
    logger.warn({ event: 'http.database_unavailable', err: (exception as Error).message, ...context }, 'database unavailable');
    return { status: 503, body: { error: { code: ErrorCode.ServiceUnavailable, message: 'the service cannot reach its database right now; retry later' } } };
  }
  if (exception instanceof RangeError && /call stack/i.test(exception.message)) {
    // A body nested deeper than validation can walk (it recurses): the request is at fault.
    return { status: 400, body: { error: { code: ErrorCode.ValidationFailed, message: 'the request body is nested too deeply' } } };
  }
  const errorId = randomUUID();
  logger.error({ event: 'http.unhandled_error', error_id: errorId, err: exception instanceof Error ? { message: exception.message, stack: exception.stack } : exception, ...context }, 'unhandled error');
  return { status: 500, body: { error: { code: ErrorCode.Internal, message: 'internal error', details: { error_id: errorId } } } };
}

/** One filter for HTTP and RPC: the same envelope everywhere (DESIGN §3). */
@Catch()
export class AllErrorsFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): unknown {
    if (host.getType() === 'rpc') {
      const { body } = toEnvelope(exception, this.logger);
      return throwError(() => body.error);
    }
    const http = host.switchToHttp();
    const reply = http.getResponse<{ status(code: number): { send(body: unknown): void }; header?: (k: string, v: string) => void }>();
    const request = http.getRequest<{ id?: string; url?: string; method?: string; is404?: boolean }>();
    // Fastify parses the body of a request for no route too: a bad body there is still a 404.
    const { status, body } = request?.is404
      ? { status: 404, body: { error: { code: ErrorCode.RouteNotFound, message: `no route ${request.method} ${request.url?.split('?')[0]}` } } }
      : // The path only: the query string may carry tokens and search text (never logged).
        toEnvelope(exception, this.logger, { request_id: request?.id, path: request?.url?.split('?')[0], method: request?.method });
    reply.status(status).send(body);
    return undefined;
  }
}

/** The SQLSTATE (or socket code) of a pg error, also when TypeORM wrapped it (`driverError`). */
function sqlStateOf(err: unknown): string | undefined {
  const e = err as { code?: unknown; driverError?: { code?: unknown } } | undefined;
  const code = typeof e?.code === 'string' ? e.code : e?.driverError?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The backstop for input that passed validation but that PostgreSQL refuses to store or compare:
 * the request is at fault, so it is a 4xx, never a 500. Judged by SQLSTATE class
 * (https://www.postgresql.org/docs/current/errcodes-appendix.html):
 * - class 22 (data exception: a NUL byte 22021, bad encoding 22P05, text too long 22001, a number
 *   or date out of range 22003/22008, bad text for a type 22P02, ...) → 400 `validation_failed`;
 * - 23502 not-null and 23514 check violations (a required value missing, a value outside the
 *   column's rule) → 400 `validation_failed`; 23503 foreign key (an id that names nothing) → 404
 *   `not_found`, as for any unknown id; 23505 unique and 23P01 exclusion → 409 `conflict`;
 * - 54000/54001/54023 (program limit: a value too large to index, a statement too complex, too many
 *   arguments: oversized input) → 400 `validation_failed`.
 * Everything else (syntax 42xxx, our own bugs) stays a 500. The message never echoes the database's.
 */
function refusedInput(err: unknown): { status: number; body: ErrorEnvelope } | undefined {
  const code = sqlStateOf(err);
  if (!code || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  const invalid = (message: string) => ({ status: 400, body: { error: { code: ErrorCode.ValidationFailed, message } } });
  if (code === '22021' || code === '22P05') return invalid('a text value holds a character that cannot be stored (such as NUL)');
  if (code === '22001') return invalid('a text value is too long');
  if (code === '22003') return invalid('a number is out of range');
  if (code === '22007' || code === '22008') return invalid('a date or time is invalid or out of range');
  if (code.startsWith('22')) return invalid('a value of the request is not valid for its field');
  if (code === '23502') return invalid('a required value is missing');
  if (code === '23514') return invalid('a value breaks a rule of its field');
  if (code === '23503') return { status: 404, body: { error: { code: ErrorCode.NotFound, message: 'not found' } } };
  if (code === '23505' || code === '23P01') return { status: 409, body: { error: { code: ErrorCode.Conflict, message: 'conflicts with an existing resource' } } };
  if (code === '54000' || code === '54001' || code === '54023') return invalid('a value of the request is too large');
  return undefined;
}
