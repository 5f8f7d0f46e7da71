import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Transform } from 'node:stream';

/** A request whose raw body bytes were kept (see captureRawBody). */
export type RequestWithRawBody = FastifyRequest & { rawBody?: Buffer };

/**
 * Keeps the exact bytes of the body of requests whose path starts with one of `pathPrefixes`, as
 * `request.rawBody` (a Buffer), beside the parsed body. Webhook signature checks (Meta's
 * `X-Hub-Signature-256` is an HMAC of the raw body, DESIGN §3) need them: re-serialising the parsed
 * JSON would not give the same bytes. Other routes pay nothing.
 *
 * Use in a controller: `@Req() request: RequestWithRawBody` → `request.rawBody`.
 */
export function captureRawBody(fastify: FastifyInstance, pathPrefixes: string[]): void {
  fastify.addHook('preParsing', async (request, _reply, payload) => {
    if (!pathPrefixes.some((prefix) => request.url.startsWith(prefix))) return payload;
    const chunks: Buffer[] = [];
    let received = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        chunks.push(chunk);
        received += chunk.length;
        // Fastify enforces bodyLimit on a replaced stream through this field.
        (tap as unknown as { receivedEncodedLength: number }).receivedEncodedLength = received;
        callback(null, chunk);
      },
      flush(callback) {
        (request as RequestWithRawBody).rawBody = Buffer.concat(chunks);
        callback();
      },
    });
    (tap as unknown as { receivedEncodedLength: number }).receivedEncodedLength = 0;
    payload.on('error', (err) => tap.destroy(err));
    return payload.pipe(tap);
  });
}
