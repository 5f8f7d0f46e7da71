import { codePointLength } from '@touchpoint/text';
import { OUTBOX_EMAIL_BODY_MAX, OUTBOX_LINKEDIN_MESSAGE_MAX } from './channel-text-limits.js';
import type { OutboxChannel } from './outbox.js';
import { validateWhatsAppPayload } from './whatsapp-payload.js';

/** The email (Nylas) payload rules: text only, a body of 1 to `OUTBOX_EMAIL_BODY_MAX` characters. Pure. */
export function validateEmailPayload(payload: unknown): string[] {
  const p = payload as { type?: unknown; body?: unknown; subject?: unknown; reply_to?: unknown } | null;
  const problems: string[] = [];
  if (p?.type !== 'text') problems.push('email supports payload type text only');
  if (typeof p?.body !== 'string' || p.body.trim() === '' || codePointLength(p.body) > OUTBOX_EMAIL_BODY_MAX) problems.push(`body must be 1 to ${OUTBOX_EMAIL_BODY_MAX} characters`);
  if (p?.subject !== undefined && typeof p.subject !== 'string') problems.push('subject must be a string');
  if (p?.reply_to !== undefined && typeof p.reply_to !== 'string') problems.push('reply_to must be a Nylas message id');
  return problems;
}

/** The LinkedIn (Unipile) payload rules: text only, a body of 1 to `OUTBOX_LINKEDIN_MESSAGE_MAX` characters. Pure. */
export function validateLinkedinPayload(payload: unknown): string[] {
  const p = payload as { type?: unknown; body?: unknown } | null;
  if (p?.type !== 'text') return ['linkedin supports payload type text only'];
  if (typeof p.body !== 'string' || p.body.trim() === '' || codePointLength(p.body) > OUTBOX_LINKEDIN_MESSAGE_MAX) return [`body must be 1 to ${OUTBOX_LINKEDIN_MESSAGE_MAX} characters`];
  return [];
}

/**
 * The one payload check of an outbox entry, by channel: the dispatcher's adapters run it at
 * enqueue, and a sender (messaging) runs it before it writes anything, so a payload the
 * dispatcher would refuse fails at the call site (seed 004 "Enqueue before wire": an enqueue
 * failure throws where the send was asked for). Returns one line per problem; empty when valid.
 */
export function validateOutboxPayload(channel: OutboxChannel, payload: unknown, idempotencyKey: string): string[] {
  switch (channel) {
    case 'whatsapp':
      return validateWhatsAppPayload(payload, idempotencyKey);
    case 'email':
      return validateEmailPayload(payload);
    case 'linkedin':
      return validateLinkedinPayload(payload);
  }
}
