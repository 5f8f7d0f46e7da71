import type { FastifyInstance } from 'fastify';
import { toWellFormedJson } from '@touchpoint/text';
import type { RequestWithRawBody } from './raw-body.js';

/**
 * The parsed body of a request under `prefixes` (the provider webhooks) has its lone surrogates
 * replaced by U+FFFD before a route sees it. JSON may spell half an emoji as `\ud83d`; the services
 * would store the text but PostgreSQL refuses it in `jsonb` (their events, receipts and triggers), so
 * the request would fail each time it is retried. Every other request holding one is refused by
 * `refuseUnstorableCharacters`, so its body is not walked again here. Webhook signatures are checked
 * on the raw bytes, which stay as sent.
 */
export function repairLoneSurrogates(fastify: FastifyInstance, prefixes: string[]): void {
  fastify.addHook('preValidation', (request, _reply, done) => {
    if (request.body !== undefined && request.body !== null && prefixes.some((prefix) => request.url.startsWith(prefix)) && mayHoldLoneSurrogate(request)) {
      request.body = toWellFormedJson(request.body);
    }
    done();
  });
}

/**
 * False when the kept raw bytes of the body (`request.rawBody`) show it holds no lone surrogate, so
 * the walk can be skipped: UTF-8 bytes decode to no surrogate at all (an encoded one becomes U+FFFD),
 * so only a `\uD800`–`\uDFFF` escape in the JSON text makes one, and the bytes hold no `\u`. True
 * when they might, or when no raw bytes were kept.
 */
function mayHoldLoneSurrogate(request: RequestWithRawBody): boolean {
  return request.rawBody === undefined || request.rawBody.includes('\\u');
}
