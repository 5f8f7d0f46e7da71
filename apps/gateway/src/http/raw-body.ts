import type { FastifyRequest } from 'fastify';

/**
 * A request whose raw body bytes were kept: `request.rawBody` (a Buffer), beside the parsed body,
 * for JSON requests under RAW_BODY_PATH_PREFIXES (gateway.app.ts; the JSON body parser of
 * libs/runtime keeps them, see `StartOptions.rawBodyPathPrefixes`). Webhook signature checks (Meta's
 * `X-Hub-Signature-256` is an HMAC of the raw body, DESIGN §3) need them: re-serialising the parsed
 * JSON would not give the same bytes. Other routes keep nothing.
 *
 * Use in a controller: `@Req() request: RequestWithRawBody` → `request.rawBody`.
 */
export type RequestWithRawBody = FastifyRequest & { rawBody?: Buffer };
