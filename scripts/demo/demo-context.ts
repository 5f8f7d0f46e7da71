import { DemoStepError, expectStatus, type GatewayClient, type SandboxClient, waitFor } from './http-clients.js';

/** Everything a demo scenario needs: the two clients, the organization, and the transcript. */
export interface DemoContext {
  gateway: GatewayClient;
  sandbox: SandboxClient;
  organizationId: string;
  /** WhatsApp phone-number id of the demo sender (at the sandbox's Meta). */
  phoneNumberId: string;
  /** Prints one transcript line under a section tag. */
  say: (section: string, text: string) => void;
  /** How long to wait for one asynchronous step, ms. */
  stepTimeoutMs: number;
  /** Tells this run's operation keys and people from an earlier run's (`npm run demo` again). */
  runTag: string;
}

/**
 * The WhatsApp number (wa_id) of the demo's contact number `slot` (0–9) in this run: new each run,
 * since a contact's daily follow-up cap and abuse penalties outlive a run (`npm run demo` again).
 */
export function demoNumber(ctx: DemoContext, slot: number): string {
  return `551198${slot}${(Number.parseInt(ctx.runTag, 36) % 1_000_000).toString().padStart(6, '0')}`;
}

/** Contact and conversation ids of a WhatsApp contact, as the gateway shows them. */
export interface ContactRef {
  contactId: string;
  conversationId: string;
  waId: string;
}

/**
 * The contact `waId` writes `text` to the demo number through the sandbox (a signed Meta
 * `messages` webhook to the gateway); resolves once messaging stored it, with the contact's ids.
 * @throws DemoStepError when the gateway refuses the webhook or the message never shows up
 */
export async function contactWrites(ctx: DemoContext, waId: string, text: string, name = 'Ana Souza'): Promise<ContactRef & { wamid: string }> {
  const delivery = expectStatus('sandbox inbound', await ctx.sandbox.request('POST', '/sandbox/meta/inbound', { from: waId, text, name, phone_number_id: ctx.phoneNumberId }), 200);
  if (delivery.status !== 200) throw new DemoStepError(`the gateway answered the inbound webhook with HTTP ${delivery.status}: ${delivery.response}`);
  const ref = await waitFor(`contact +${waId} in messaging`, () => findWhatsappContact(ctx, waId), ctx.stepTimeoutMs);
  await waitFor(`message "${text}" stored`, async () => (await inboundTexts(ctx, ref.conversationId)).includes(text), ctx.stepTimeoutMs);
  return { ...ref, wamid: delivery.message_id };
}

/** The contact with phone `+waId` and its WhatsApp conversation, or undefined. */
export async function findWhatsappContact(ctx: DemoContext, waId: string): Promise<ContactRef | undefined> {
  let cursor: string | undefined;
  let contactId: string | undefined;
  do {
    const page = expectStatus('GET /contacts', await ctx.gateway.get(`/contacts?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), 200);
    contactId = page.items.find((c: { phone: string | null }) => c.phone === `+${waId}`)?.id;
    cursor = page.next_cursor ?? undefined;
  } while (!contactId && cursor);
  if (!contactId) return undefined;
  const conversations = expectStatus('GET /conversations', await ctx.gateway.get(`/conversations?contact_id=${contactId}&channel=whatsapp`), 200);
  const conversationId = conversations.items[0]?.id;
  return conversationId ? { contactId, conversationId, waId } : undefined;
}

/** Every message of a conversation (up to 200, as the gateway lists them). */
export async function conversationMessages(ctx: DemoContext, conversationId: string): Promise<Array<Record<string, any>>> {
  return expectStatus('GET /conversations/:id/messages', await ctx.gateway.get(`/conversations/${conversationId}/messages?limit=200`), 200).items;
}

async function inboundTexts(ctx: DemoContext, conversationId: string): Promise<string[]> {
  return (await conversationMessages(ctx, conversationId)).filter((m) => m.direction === 'inbound').map((m) => m.body ?? m.text);
}

/**
 * Makes sure the organization has a connected WhatsApp sender on the sandbox's number, and that
 * the sandbox reports `sent`, `delivered` and `read` for what it accepts (signed status webhooks).
 * @returns the sender id
 */
export async function prepareWhatsapp(ctx: DemoContext): Promise<string> {
  expectStatus('sandbox meta settings', await ctx.sandbox.request('POST', '/sandbox/meta/settings', { statuses: ['sent', 'delivered', 'read'], status_delay_ms: 200 }), 200);
  const existing = expectStatus('GET /senders', await ctx.gateway.get('/senders?channel=whatsapp'), 200);
  const items: Array<{ id: string; phone_number_id: string }> = existing.items;
  let sender = items.find((s) => s.phone_number_id === ctx.phoneNumberId);
  if (!sender) {
    // The sandbox's Meta holds the number; the token it is given is what proves the sender owns it.
    expectStatus('sandbox meta number', await ctx.sandbox.request('POST', '/sandbox/meta/numbers', { phone_number_id: ctx.phoneNumberId, access_token: 'sandbox-access-token', display_phone_number: '5511912345678' }), 200);
    sender = expectStatus(
      'POST /senders',
      await ctx.gateway.post('/senders', { channel: 'whatsapp', phone_number_id: ctx.phoneNumberId, display_phone_number: '5511912345678', business_account_id: '100000000000001', access_token: 'sandbox-access-token', label: 'Demo number (sandbox)' }),
      201,
    );
  }
  ctx.say('setup', `WhatsApp sender ${sender!.id} on phone number id ${ctx.phoneNumberId} (the sandbox's Meta), connected`);
  return sender!.id;
}
