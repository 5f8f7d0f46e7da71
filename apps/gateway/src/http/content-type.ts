import type { FastifyInstance } from 'fastify';
import { AppError, ErrorCode } from '@touchpoint/errors';

/** `application/json` and the `+json` family (`application/problem+json`, ...). */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

/**
 * Routes that take the form bodies mail clients send (RFC 8058 one-click unsubscribe:
 * `List-Unsubscribe=One-Click` as urlencoded or multipart form data).
 */
export const FORM_BODY_PATHS = ['/nylas/email/unsubscribe'];

/**
 * The API speaks JSON only: a request that carries a body of another type answers 415
 * `unsupported_media_type` before its body is read (Fastify would otherwise hand a text/plain
 * body to the route as a string).
 */
export function requireJsonBodies(fastify: FastifyInstance): void {
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    const length = request.headers['content-length'];
    const hasBody = (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
    if (!hasBody || FORM_BODY_PATHS.includes(pathOf(request.url))) {
      done(null, payload);
      return;
    }
    const mediaType = (request.headers['content-type'] ?? '').split(';')[0].trim();
    if (!JSON_MEDIA_TYPE.test(mediaType)) {
      done(new AppError(ErrorCode.UnsupportedMediaType, `send the body as application/json (got ${mediaType || 'no content type'})`));
      return;
    }
    done(null, payload);
  });
}

/** The path of a request target, without its query: `/a/b?c=1` → `/a/b`. */
function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}
