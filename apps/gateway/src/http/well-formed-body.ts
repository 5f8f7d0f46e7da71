import type { FastifyInstance } from 'fastify';
import { toWellFormedJson } from '@touchpoint/text';

/**
 * Every parsed request body has its lone surrogates replaced by U+FFFD before a route sees it. JSON
 * may spell half an emoji as `\ud83d`; the services would store the text but PostgreSQL refuses it
 * in `jsonb` (their events, receipts and triggers), so the request would fail each time it is
 * retried. In practice this meets the webhooks only: `refuseUnstorableCharacters`, registered
 * before it, answers 400 to any other request that holds one. Webhook signatures are checked on the
 * raw bytes, which stay as sent.
 */
export function repairLoneSurrogates(fastify: FastifyInstance): void {
  fastify.addHook('preValidation', async (request) => {
    if (request.body !== undefined && request.body !== null) request.body = toWellFormedJson(request.body);
  });
}
