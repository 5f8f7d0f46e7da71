import type { FastifyInstance } from 'fastify';
import { toWellFormedJson } from '@touchpoint/text';

/**
 * The parsed body of a request under `prefixes` (the provider webhooks) has its lone surrogates
 * replaced by U+FFFD before a route sees it. JSON may spell half an emoji as `\ud83d`; the services
 * would store the text but PostgreSQL refuses it in `jsonb` (their events, receipts and triggers), so
 * the request would fail each time it is retried. Every other request holding one is refused by
 * `refuseUnstorableCharacters`, so its body is not walked again here. Webhook signatures are checked
 * on the raw bytes, which stay as sent.
 */
export function repairLoneSurrogates(fastify: FastifyInstance, prefixes: string[]): void {
  fastify.addHook('preValidation', async (request) => {
    if (!prefixes.some((prefix) => request.url.startsWith(prefix))) return;
    if (request.body !== undefined && request.body !== null) request.body = toWellFormedJson(request.body);
  });
}
