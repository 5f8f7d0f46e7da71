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
    await teachSandboxNumber(ctx);
    sender = expectStatus(
      'POST /senders',
      await ctx.gateway.post('/senders', { channel: 'whatsapp', phone_number_id: ctx.phoneNumberId, display_phone_number: '5511912345678', business_account_id: '100000000000001', access_token: 'sandbox-access-token', label: 'Demo number (sandbox)' }),
      201,
    );
  }
  ctx.say('setup', `WhatsApp sender ${sender!.id} on phone number id ${ctx.phoneNumberId} (the sandbox's Meta), connected`);
  return sender!.id;
}

/** The demo number at the sandbox's Meta, with the token the demo sender was connected with. */
async function teachSandboxNumber(ctx: DemoContext): Promise<void> {
  expectStatus('sandbox meta number', await ctx.sandbox.request('POST', '/sandbox/meta/numbers', { phone_number_id: ctx.phoneNumberId, access_token: 'sandbox-access-token', display_phone_number: '5511912345678' }), 200);
}

/** The label of the mailbox the demo connects (how a later start finds it again). */
export const DEMO_MAILBOX_LABEL = 'Demo mailbox (sandbox Nylas)';

/** The demo mailbox's grant at the sandbox's Nylas (one per organization), with the key the mailbox was connected with. */
export async function teachSandboxGrant(ctx: DemoContext): Promise<void> {
  expectStatus('sandbox nylas grant', await ctx.sandbox.request('POST', '/sandbox/nylas/grants', { grant_id: `demo-grant-${ctx.organizationId}`, api_key: 'sandbox-nylas-api-key', email: 'sales@touchpoint-demo.example', provider: 'google' }), 200, 201);
}

/**
 * Gives a restarted sandbox back what the demo taught it: the sandbox keeps nothing across restarts,
 * while the platform still holds the demo's WhatsApp sender and mailbox as connected, so without
 * this their sends would fail after the first `npm start`. Teaches only what the organization has.
 */
export async function restoreSandboxProviders(ctx: DemoContext): Promise<string[]> {
  const restored: string[] = [];
  const whatsapp = expectStatus('GET /senders', await ctx.gateway.get('/senders?channel=whatsapp'), 200).items as Array<{ phone_number_id: string }>;
  if (whatsapp.some((s) => s.phone_number_id === ctx.phoneNumberId)) {
    await teachSandboxNumber(ctx);
    restored.push(`WhatsApp number ${ctx.phoneNumberId}`);
  }
  const email = expectStatus('GET /senders', await ctx.gateway.get('/senders?channel=email'), 200).items as Array<{ label: string | null }>;
  if (email.some((s) => s.label === DEMO_MAILBOX_LABEL)) {
    await teachSandboxGrant(ctx);
    restored.push(`Nylas grant demo-grant-${ctx.organizationId}`);
  }
  return restored;
}
