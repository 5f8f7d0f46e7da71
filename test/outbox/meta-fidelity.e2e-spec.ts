import { randomUUID } from 'node:crypto';
import { type MessageView, MessagingRpc, type MessagingSendResult, type OutboxPayload } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { aWhatsAppNumber } from '@touchpoint/testing';
import { textTo } from './harness.js';
import { PHONE_NUMBER_ID, soon, startWireWorld, type WireWorld } from './wire-world.js';

/**
 * The WhatsApp path as Meta's Cloud API documents it, driven through the sandbox's Graph and its
 * signed webhooks: contextual replies on every message type, template components (limited-time
 * offer, carousel, buttons with sub_type/index), a 190 that disconnects the number, webhook-level
 * `value.errors[]` that slow it, system messages that move a contact to its new number, and the
 * error subcode and details kept on a failed message.
 */
/** The part of a Meta webhook body these tests look into. */
type MetaWebhook = { entry: { changes: { value: Record<string, unknown> }[] }[] };

describe('Meta fidelity of the WhatsApp path', () => {
  let w: WireWorld;
  let seq = 0;
  const outbox = () => w.world.schema('outbox-dispatcher');
  const messaging = () => w.world.schema('messaging');
  const newNumber = () => `55119${String(61000000 + ++seq * 7919).slice(-8)}`;
  const rpc = () => w.d.app.get(RpcClient);
  const entry = async (id: string) => (await w.world.sql<Record<string, unknown> & { next_attempt_at: Date }>(`SELECT * FROM "${outbox()}".message_outbox WHERE id = $1`, [id]))[0];
  const enqueue = (org: string, to: string, payload: OutboxPayload) => w.d.enqueue.enqueue(textTo(org, to, { payload }));
  const quoted = 'wamid.HBgNNTUxMTk4NzY1NDMyMRUCABIYFjNFQjBEMkZBNkE3NjA2OUU2OTZBAA==';

  beforeAll(async () => {
    w = await startWireWorld('outbox_meta_fidelity');
    const gatewayUrl = (await w.gateway.getUrl()).replace('[::1]', '127.0.0.1');
    await w.sandbox.post('/sandbox/meta/settings', { webhook_url: `${gatewayUrl}/webhooks/meta`, status_webhooks: false, webhook_retries: 0 });
  });
  afterAll(() => w.close());

  /** A second organization with its own number, for the tests that break or slow a number. */
  async function otherNumber(phoneNumberId: string): Promise<{ org: string; senderId: string }> {
    const org = `org-${randomUUID()}`;
    const senderId = await aWhatsAppNumber(w.d, org, phoneNumberId);
    return { org, senderId };
  }

  it('quotes the replied-to message (context.message_id) on media, interactive and template sends, not only text', async () => {
    const to = newNumber();
    const payloads: OutboxPayload[] = [
      { type: 'media', media_type: 'image', link: 'https://cdn.example/p.png', caption: 'this one', reply_to: quoted },
      { type: 'interactive', interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: [{ type: 'reply', reply: { id: 'y', title: 'Yes' } }] } }, reply_to: quoted },
      { type: 'template', name: 'order_update', language: 'pt_BR', reply_to: quoted },
    ];
    for (const p of payloads) await enqueue(w.org, to, p);
    // And through messaging: an automated reply with media to an inbound wamid.
    const sent = await rpc().callUnchecked<MessagingSendResult>('messaging', MessagingRpc.Send, {
      organization_id: w.org,
      idempotency_key: `reply:${quoted}:catalog`,
      channel: 'whatsapp',
      to: `+${to}`,
      sender_type: 'automation',
      requester: 'test',
      media: { media_type: 'document', link: 'https://cdn.example/catalog.pdf', filename: 'catalog.pdf' },
      reply_to_external_id: quoted,
    });
    await soon(async () => (await w.entriesOf(sent.message_id)).length === 1);
    await w.drain(5);
    const calls = await w.sandbox.received(to);
    expect(calls.map((c) => [c.context.type, c.outcome, c.body.context])).toEqual([
      ['image', 'accepted', { message_id: quoted }],
      ['interactive', 'accepted', { message_id: quoted }],
      ['template', 'accepted', { message_id: quoted }],
      ['document', 'accepted', { message_id: quoted }],
    ]);
  });

  it('sends a limited-time offer and a carousel as Meta defines them, and refuses at enqueue a button without sub_type', async () => {
    const to = newNumber();
    const offer: OutboxPayload = {
      type: 'template',
      name: 'summer_offer',
      language: 'en_US',
      components: [
        { type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: 1_790_000_000_000 } }] },
        { type: 'button', sub_type: 'copy_code', index: 0, parameters: [{ type: 'coupon_code', coupon_code: 'SUMMER25' }] },
      ],
    };
    const carousel: OutboxPayload = {
      type: 'template',
      name: 'picks',
      language: 'en_US',
      components: [
        { type: 'body', parameters: [{ type: 'text', text: 'Ana' }] },
        {
          type: 'carousel',
          cards: [0, 1].map((card_index) => ({
            card_index,
            components: [
              { type: 'header', parameters: [{ type: 'image', image: { link: `https://cdn.example/${card_index}.png` } }] },
              { type: 'button', sub_type: 'quick_reply', index: 0, parameters: [{ type: 'payload', payload: `more-${card_index}` }] },
            ],
          })),
        },
      ],
    };
    await enqueue(w.org, to, offer);
    await enqueue(w.org, to, carousel);
    const noSubType = textTo(w.org, to, { payload: { type: 'template', name: 'picks', language: 'en_US', components: [{ type: 'button', index: 0, parameters: [{ type: 'payload', payload: 'x' }] }] } as OutboxPayload });
    await expect(w.d.enqueue.enqueue(noSubType)).rejects.toMatchObject({ code: 'invalid_payload' });
    expect(await w.world.sql(`SELECT 1 FROM "${outbox()}".message_outbox WHERE idempotency_key = $1`, [noSubType.idempotency_key])).toHaveLength(0);
    await w.drain(3);
    const calls = await w.sandbox.received(to);
    expect(calls.map((c) => c.outcome)).toEqual(['accepted', 'accepted']);
    expect((calls[0].body.template as { components: unknown }).components).toEqual(offer.components);
    expect((calls[1].body.template as { components: unknown }).components).toEqual(carousel.components);
  });

  it('disconnects the number on a 190 and tells the organization, instead of calling Meta for each queued message', async () => {
    const { org, senderId } = await otherNumber('100000000000771');
    const to = newNumber();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await w.d.enqueue.enqueue(textTo(org, to))).entry_id);
    await w.sandbox.post('/sandbox/meta/tokens/expire', { access_token: 'token-100000000000771' });
    await w.drain(4);

    const calls = (await w.sandbox.received(to)).filter((c) => c.context.phone_number_id === '100000000000771');
    expect(calls.map((c) => c.outcome)).toEqual(['error_190']);
    const [first, ...rest] = await Promise.all(ids.map(entry));
    expect(first).toMatchObject({ status: 'failed', last_classification: 'sender_unauthorized', last_error_code: '190', last_error_subcode: '463', last_http_status: 401 });
    expect(first.last_error_details).toContain('expired');
    for (const later of rest) expect(later).toMatchObject({ status: 'failed', last_classification: 'sender_unauthorized', last_error_code: 'sender_token_invalid', attempts: 1 });
    const [sender] = await w.world.sql<Record<string, unknown>>(`SELECT status, status_reason FROM "${outbox()}".senders WHERE id = $1`, [senderId]);
    expect(sender).toEqual({ status: 'disconnected', status_reason: 'token_invalid' });
    await expect(w.d.enqueue.enqueue(textTo(org, newNumber()))).rejects.toMatchObject({ code: 'sender_disconnected' });

    // Messaging learns it: its read model and the organization's real-time feed.
    await soon(async () => (await w.world.sql(`SELECT 1 FROM "${messaging()}".whatsapp_senders WHERE sender_id = $1 AND status = 'disconnected'`, [senderId])).length === 1);
    const feed = await soon(async () => {
      const rows = await w.world.sql<{ data: unknown }>(`SELECT data FROM "${messaging()}".stream_events WHERE organization_id = $1 AND type = 'outbox.sender.disconnected'`, [org]);
      return rows.length ? rows : false;
    });
    expect(feed[0].data).toMatchObject({ sender_id: senderId, reason: 'token_invalid', error_code: '190', error_subcode: '463' });
  });

  it('records a webhook-level value.errors[] 130429 and holds that number’s sends for the pause', async () => {
    const { org, senderId } = await otherNumber('100000000000772');
    const to = newNumber();
    const queued = await w.d.enqueue.enqueue(textTo(org, to));
    const delivery = await w.sandbox.post<{ status: number; payload: MetaWebhook }>('/sandbox/meta/errors', { phone_number_id: '100000000000772', code: 130429 });
    expect(delivery.status).toBe(200);
    expect(delivery.payload.entry[0].changes[0].value.statuses).toBeUndefined();
    const [stored] = await w.world.sql<Record<string, unknown> & { paused_until: Date }>(`SELECT code, details, sender_id, paused_until FROM "${outbox()}".whatsapp_webhook_errors WHERE phone_number_id = '100000000000772'`);
    expect(stored).toMatchObject({ code: 130429, details: 'Cloud API message throughput has been reached.', sender_id: senderId });
    const pausedUntil = new Date(stored.paused_until).getTime();
    expect(pausedUntil).toBe(w.d.clock.now().getTime() + 60_000);
    const later = await w.d.enqueue.enqueue(textTo(org, newNumber()));

    await w.d.drain.drain(5000);
    w.d.clock.advance(30_000);
    await w.d.drain.drain(5000);
    expect((await w.sandbox.received()).filter((c) => c.context.phone_number_id === '100000000000772')).toHaveLength(0);
    expect((await entry(queued.entry_id)).status).toBe('pending');
    expect(new Date((await entry(later.entry_id)).next_attempt_at).getTime()).toBe(pausedUntil);

    w.d.clock.advance(31_000);
    await w.drain(2);
    expect((await w.sandbox.received()).filter((c) => c.context.phone_number_id === '100000000000772').map((c) => c.outcome)).toEqual(['accepted', 'accepted']);
  });

  it('moves the contact to its new number on a system message (user changed number), without storing a message', async () => {
    const oldNumber = newNumber();
    const fresh = newNumber();
    await w.sandbox.post('/sandbox/meta/inbound', { from: oldNumber, text: 'hello there' });
    const [contact] = await soon(async () => {
      const rows = await w.world.sql<Record<string, unknown>>(`SELECT id, phone FROM "${messaging()}".contacts WHERE organization_id = $1 AND phone = $2`, [w.org, `+${oldNumber}`]);
      return rows.length ? rows : false;
    });
    const sys = await w.sandbox.post<{ status: number; payload: MetaWebhook; message_id: string }>('/sandbox/meta/system', { from: oldNumber, wa_id: fresh });
    expect(sys.status).toBe(200);
    expect(sys.payload.entry[0].changes[0].value.contacts).toBeUndefined();
    await soon(async () => (await w.world.sql(`SELECT 1 FROM "${messaging()}".contacts WHERE id = $1 AND phone = $2`, [contact.id, `+${fresh}`])).length === 1);
    expect(await w.world.sql(`SELECT 1 FROM "${messaging()}".messages WHERE external_id = $1`, [sys.message_id])).toHaveLength(0);
    const [event] = await w.world.sql<{ payload: { data: unknown } }>(`SELECT payload FROM "${messaging()}".outbox_events WHERE type = 'messaging.contact.updated' AND payload->'data'->>'contact_id' = $1`, [contact.id]);
    expect(event.payload.data).toMatchObject({ phone: `+${fresh}`, previous_phone: `+${oldNumber}`, reason: 'whatsapp_number_changed' });
  });

  it('keeps Graph’s error_subcode and error_data.details on the failed entry, its event and the message', async () => {
    const to = newNumber();
    await w.sandbox.fault({ kind: 'error', code: 131008, status: 400, subcode: 2494010, details: 'The parameter to is required.', match: { wa_id: to } });
    const sent = await rpc().callUnchecked<MessagingSendResult>('messaging', MessagingRpc.Send, {
      organization_id: w.org,
      idempotency_key: `test:subcode:${to}`,
      channel: 'whatsapp',
      to: `+${to}`,
      sender_type: 'automation',
      requester: 'test',
      text: 'will fail',
    });
    await soon(async () => (await w.entriesOf(sent.message_id)).length === 1);
    await w.drain(1);
    expect((await w.sandbox.received(to)).map((c) => c.outcome)).toEqual(['error_131008']);
    const [row] = await w.entriesOf(sent.message_id);
    expect(row).toMatchObject({ status: 'failed', last_error_code: '131008', last_error_subcode: '2494010', last_error_details: 'The parameter to is required.' });
    const [event] = await w.world.sql<{ payload: { data: unknown } }>(`SELECT payload FROM "${outbox()}".outbox_events WHERE type = 'outbox.entry.failed' AND payload->'data'->>'entry_id' = $1`, [row.id]);
    expect(event.payload.data).toMatchObject({ error_code: '131008', error_subcode: '2494010', error_details: 'The parameter to is required.' });
    await soon(async () => (await w.world.sql(`SELECT 1 FROM "${messaging()}".messages WHERE id = $1 AND status = 'failed' AND error_subcode = '2494010' AND error_details = $2`, [sent.message_id, 'The parameter to is required.'])).length === 1);
    // The conversation's message list (what `GET /conversations/{id}/messages` answers) shows them too.
    const page = await rpc().callUnchecked<{ items: MessageView[] }>('messaging', MessagingRpc.ConversationMessages, { organization_id: w.org, conversation_id: sent.conversation_id });
    expect(page.items.find((m) => m.id === sent.message_id)).toMatchObject({ status: 'failed', error_code: '131008', error_subcode: '2494010', error_details: 'The parameter to is required.' });
  });

  it('keeps error_data.details of a failed status webhook on the message', async () => {
    const to = newNumber();
    const sent = await rpc().callUnchecked<MessagingSendResult>('messaging', MessagingRpc.Send, { organization_id: w.org, idempotency_key: `test:status:${to}`, channel: 'whatsapp', to: `+${to}`, sender_type: 'automation', requester: 'test', text: 'hi' });
    await soon(async () => (await w.entriesOf(sent.message_id)).length === 1);
    await w.drain(1);
    const [row] = await w.entriesOf(sent.message_id);
    await soon(async () => (await w.world.sql(`SELECT 1 FROM "${messaging()}".messages WHERE id = $1 AND status = 'sent'`, [sent.message_id])).length === 1);
    const details = 'In order to maintain a healthy ecosystem engagement, the message failed to be delivered.';
    const res = await w.sandbox.post<{ status: number }>('/sandbox/meta/status', {
      biz_opaque_callback_data: row.id,
      status: 'failed',
      phone_number_id: PHONE_NUMBER_ID,
      errors: [{ code: 131049, title: 'This message was not delivered to maintain healthy ecosystem engagement.', message: 'This message was not delivered to maintain healthy ecosystem engagement.', error_data: { details } }],
    });
    expect(res.status).toBe(200);
    await soon(async () => (await w.world.sql(`SELECT 1 FROM "${messaging()}".messages WHERE id = $1 AND status = 'failed' AND error_code = '131049' AND error_details = $2`, [sent.message_id, details])).length === 1);
  });
});
