import { conversationMessages, contactWrites, type DemoContext, demoNumber, findWhatsappContact } from './demo-context.js';
import { expectStatus, waitFor } from './http-clients.js';

/** Messages the flooding contact sends in a row. */
const FLOOD_SIZE = 12;

/** What the flood scenario observed. */
export interface FloodResult {
  contactId: string;
  conversationId: string;
  sent: number;
  stored: number;
  /** Statuses the gateway answered the sandbox's webhooks with (always 200: Meta must not retry). */
  webhookStatuses: number[];
}

/**
 * One contact floods the demo number with FLOOD_SIZE messages in a few seconds; the abuse rules
 * (seed 004: per-contact rate limits; 5 a minute when the organization set none) let the first
 * ones through and deny the rest, which messaging does not store. The gateway still answers every
 * webhook 200, so Meta does not retry what was denied on purpose.
 */
export async function floodScenario(ctx: DemoContext): Promise<FloodResult> {
  const section = 'abuse';
  // A new number per run: the penalties of an earlier run's flood (npm run demo) would still hold.
  const waId = demoNumber(ctx, 9);
  const known = await findWhatsappContact(ctx, waId);
  const before = known ? (await conversationMessages(ctx, known.conversationId)).filter((m) => m.direction === 'inbound').length : 0;
  const first = await contactWrites(ctx, waId, `oi (1) ${ctx.runTag}`, 'Carlos Flood');
  const statuses: number[] = [200];
  for (let i = 2; i <= FLOOD_SIZE; i++) {
    const delivery = expectStatus('sandbox inbound', await ctx.sandbox.request('POST', '/sandbox/meta/inbound', { from: waId, text: `oi (${i}) ${ctx.runTag}`, name: 'Carlos Flood', phone_number_id: ctx.phoneNumberId }), 200);
    statuses.push(delivery.status);
  }
  ctx.say(section, `contact ${first.contactId} (+${waId}) sent ${FLOOD_SIZE} messages in a row through the sandbox (gateway answered ${[...new Set(statuses)].join('/')})`);
  // Every webhook was answered; wait until messaging has settled the last of them.
  let stored = 0;
  let stable = 0;
  await waitFor(
    'the flood settled',
    async () => {
      const now = (await conversationMessages(ctx, first.conversationId)).filter((m) => m.direction === 'inbound').length - before;
      stable = now === stored ? stable + 1 : 0;
      stored = now;
      return stable >= 6;
    },
    ctx.stepTimeoutMs,
    300,
  );
  const contact = (await findWhatsappContact(ctx, waId))!;
  ctx.say(section, `conversation ${contact.conversationId}: ${stored} of ${FLOOD_SIZE} stored, ${FLOOD_SIZE - stored} denied by the rate limit`);
  return { contactId: first.contactId, conversationId: first.conversationId, sent: FLOOD_SIZE, stored, webhookStatuses: statuses };
}
