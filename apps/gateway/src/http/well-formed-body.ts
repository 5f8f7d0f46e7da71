import type { FastifyInstance } from 'fastify';
import { toStorableJson } from '@touchpoint/text';
import type { RequestWithRawBody } from './raw-body.js';

/**
 * The parsed body of a request under `prefixes` (the provider webhooks) has its lone surrogates and
 * its NUL characters replaced by U+FFFD before a route sees it (`toStorableJson`). JSON may spell
 * half an emoji as `\ud83d` or a NUL as `\u0000`; PostgreSQL refuses both in `jsonb` and `text`
 * (the services' status rows, events, receipts and triggers), so the owner would refuse the webhook
 * each time the provider delivers it again, and every other status or message in it with it. Every
 * other request holding one is refused by `refuseUnstorableCharacters`, so its body is not walked
 * again here. Webhook signatures are checked on the raw bytes, which stay as sent.
 */
export function repairUnstorableCharacters(fastify: FastifyInstance, prefixes: string[]): void {
  fastify.addHook('preValidation', (request, _reply, done) => {
    if (request.body !== undefined && request.body !== null && prefixes.some((prefix) => request.url.startsWith(prefix)) && mayHoldUnstorable(request)) {
      request.body = toStorableJson(request.body);
    }
    done();
  });
}

/**
 * False when the kept raw bytes of the body (`request.rawBody`) show it holds no lone surrogate and
 * no NUL, so the walk can be skipped: UTF-8 bytes decode to no surrogate at all (an encoded one
 * becomes U+FFFD), and JSON allows no raw control character in a string, so only a `\uD800`–`\uDFFF`
 * or `\u0000` escape makes one, and the bytes hold no `\u`. True when they might, or when no raw
 * bytes were kept.
 */
function mayHoldUnstorable(request: RequestWithRawBody): boolean {
  return request.rawBody === undefined || request.rawBody.includes('\\u');
}
