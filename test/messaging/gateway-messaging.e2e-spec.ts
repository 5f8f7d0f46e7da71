import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHmac, randomUUID } from 'node:crypto';
import { MessagingWhatsAppRpc } from '@touchpoint/contracts';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { gatewayBuilders, httpClient, recordRpcCalls, type SeededKey } from '../gateway/gateway-world.js';
import { inboundPipeline } from './inbound-pipeline.js';
import { inboundText, newWamid, outboxEvents, registerSender } from './helpers.js';

/**
 * Reads an SSE response until `count` events came or `timeoutMs` passed; then aborts it.
 * `opened` resolves when the response headers came: the stream's starting cursor is fixed (the
 * route reads its first page before it answers), so events caused after it are in the stream.
 */
function readEvents(url: string, secret: string, headers: Record<string, string>, count: number, timeoutMs = 5000) {
  const controller = new AbortController();
  const opened = fetch(url, { headers: { authorization: `Bearer ${secret}`, ...headers }, signal: controller.signal });
  const read = opened.then((res) => collectEvents(res, controller, count, timeoutMs));
  return Object.assign(read, { opened });
}

async function collectEvents(res: Response, controller: AbortController, count: number, timeoutMs: number) {
  const events: { id?: string; event?: string; data?: Record<string, unknown> }[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const deadline = setTimeout(() => controller.abort(), timeoutMs);
  try {
    while (events.length < count) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const e: { id?: string; event?: string; data?: Record<string, unknown> } = {};
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) e.id = line.slice(4);
          else if (line.startsWith('event: ')) e.event = line.slice(7);
          else if (line.startsWith('data: ')) e.data = JSON.parse(line.slice(6));
        }
        if (e.event) events.push(e);
      }
    }
  } catch {
    // aborted at the deadline
  } finally {
    clearTimeout(deadline);
    controller.abort();
  }
  return { status: res.status, contentType: res.headers.get('content-type'), events };
}

describe('gateway messaging routes', () => {
  let world: TestWorld;
  let gateway: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let base: string;
  let key: SeededKey;
  let readOnly: SeededKey;
  let other: SeededKey;

  beforeAll(async () => {
    world = await createTestWorld('gwmsg');
    messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '200' })));
    // The dispatcher takes the suppression an opt-out's webhook waits for; nothing is drained here.
    await world.start(OutboxDispatcherModule.forRoot(world.config(OutboxDispatcherConfig, { OUTBOX_SWEEP_INTERVAL_MS: '0', OUTBOX_DRAIN_AUTOSTART: 'false' })));
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    base = await gateway.getUrl();
    http = httpClient(base);
    const builders = gatewayBuilders(gateway);
    key = await builders.organizationWithKey({ scopes: ['messaging:read', 'messaging:write'] });
    readOnly = await builders.organizationWithKey({ scopes: ['messaging:read'], organizationId: key.organizationId, email: 'reader@example.com' });
    other = await builders.organizationWithKey({ scopes: ['messaging:read', 'messaging:write'] });
  });
  afterAll(() => world.close());

  it('creates, reads, lists by cursor, tags, untags and erases contacts, scoped to the organization', async () => {
    const created = await http('POST', '/contacts', { secret: key.secret, json: { name: 'Ana Example', phone: '+55 11 98765-4321', tags: ['lead'] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Ana Example', phone: '+5511987654321', tags: ['lead'], kind: 'crm', erased: false });
    const id = created.body.id;

    const duplicate = await http('POST', '/contacts', { secret: key.secret, json: { phone: '551187654321' } });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.details).toEqual({ contact_id: id });
    expect((await http('POST', '/contacts', { secret: key.secret, json: { phone: 'not a phone' } })).body.error.code).toBe('validation_failed');
    for (const empty of [{}, { tags: ['lead'] }, { name: '' }]) {
      const refused = await http('POST', '/contacts', { secret: key.secret, json: empty });
      expect([refused.status, refused.body.error?.code]).toEqual([400, 'validation_failed']);
    }
    expect((await http('POST', '/contacts', { secret: readOnly.secret, json: { name: 'x' } })).status).toBe(403);

    for (let i = 0; i < 3; i++) await http('POST', '/contacts', { secret: key.secret, json: { name: `Lead ${i}`, email: `lead${i}@example.com`, tags: ['bulk'] } });
    const page1 = await http('GET', '/contacts?tag=bulk&limit=2', { secret: key.secret });
    expect(page1.body.items).toHaveLength(2);
    const page2 = await http('GET', `/contacts?tag=bulk&limit=2&cursor=${page1.body.next_cursor}`, { secret: key.secret });
    expect(page2.body.items).toHaveLength(1);
    expect(page2.body.next_cursor).toBeNull();
    expect((await http('GET', '/contacts?cursor=garbage', { secret: key.secret })).body.error.code).toBe('invalid_cursor');
    // A limit of the wrong type names that problem alone, not also the range it cannot be checked against.
    const notANumber = await http('GET', '/contacts?limit=abc', { secret: key.secret });
    expect([notANumber.status, notANumber.body.error.details]).toEqual([400, [{ field: 'limit', problems: [expect.stringContaining('integer')] }]]);
    const tooMany = await http('GET', '/contacts?limit=100000', { secret: key.secret });
    expect([tooMany.status, tooMany.body.error.details]).toEqual([400, [{ field: 'limit', problems: [expect.stringContaining('must not be greater than')] }]]);

    expect((await http('GET', `/contacts/${id}`, { secret: other.secret })).status).toBe(404);
    expect((await http('PATCH', `/contacts/${id}`, { secret: key.secret, json: { time_zone: 'America/Sao_Paulo' } })).body.time_zone).toBe('America/Sao_Paulo');
    expect((await http('POST', `/contacts/${id}/tags`, { secret: key.secret, json: { tags: ['vip', 'lead'] } })).body.tags).toEqual(['lead', 'vip']);
    expect((await http('DELETE', `/contacts/${id}/tags/lead`, { secret: key.secret })).body.tags).toEqual(['vip']);
    const tagged = await outboxEvents<{ contact_id: string; tags: string[] }>(world, 'messaging', 'messaging.contact.tagged');
    expect(tagged.filter((e) => e.payload.data.contact_id === id).map((e) => e.payload.data.tags)).toEqual([['vip']]);

    const erased = await http('POST', `/contacts/${id}/erase`, { secret: key.secret });
    expect(erased.body).toMatchObject({ erased: true, name: null, phone: null, tags: [] });
    expect((await outboxEvents<{ contact_id: string }>(world, 'messaging', 'messaging.contact.erased')).filter((e) => e.payload.data.contact_id === id)).toHaveLength(1);
  });

  it('answers 400 validation_failed to a contact email over RFC 5321’s lengths (local part 64 octets, address 254), creating or updating', async () => {
    const tooLong = [`${'a'.repeat(300)}@x.co`, `${'a'.repeat(65)}@x.co`, `ana@${'b'.repeat(250)}.co`];
    for (const email of tooLong) {
      const refused = await http('POST', '/contacts', { secret: key.secret, json: { name: 'Long Address', email } });
      expect([refused.status, refused.body.error]).toEqual([400, { code: 'validation_failed', message: 'email is not a valid address', details: { field: 'email' } }]);
    }
    const longest = `${'a'.repeat(64)}@x.co`;
    const created = await http('POST', '/contacts', { secret: key.secret, json: { name: 'Long Address', email: longest } });
    expect([created.status, created.body.email]).toEqual([201, longest]);
    const patched = await http('PATCH', `/contacts/${created.body.id}`, { secret: key.secret, json: { email: tooLong[1] } });
    expect([patched.status, patched.body.error?.code]).toEqual([400, 'validation_failed']);
    expect((await http('GET', `/contacts/${created.body.id}`, { secret: key.secret })).body.email).toBe(longest);
  });

  it('stores a signed Meta webhook whose text ends in half an emoji (a lone \\ud83d escape), and its STOP still opts out', async () => {
    const organizationId = (await gatewayBuilders(gateway).organizationWithKey({ scopes: ['messaging:read'] })).organizationId;
    const phoneNumberId = `pn-${randomUUID()}`;
    await registerSender(world, organizationId, phoneNumberId);
    const wamid = newWamid();
    const waId = '5511960007777';
    const value = { messaging_product: 'whatsapp', metadata: { display_phone_number: '5511912345678', phone_number_id: phoneNumberId }, ...inboundText(wamid, waId, 'STOP \uD83D', Math.floor(Date.now() / 1000), phoneNumberId) };
    // JSON.stringify writes the lone surrogate as the escape \ud83d, as a provider's JSON may.
    const raw = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '100000000000001', changes: [{ field: 'messages', value }] }] });
    expect(raw).toContain('\\ud83d');
    const signature = `sha256=${createHmac('sha256', world.config(GatewayConfig).META_APP_SECRET).update(raw).digest('hex')}`;

    const res = await http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature } });
    expect(res.status).toBe(200);
    // In force at the dispatcher when the webhook was acknowledged, before the message is processed.
    expect(await world.sql(`SELECT 1 FROM "${world.schema('outbox-dispatcher')}".contact_suppressions WHERE organization_id = $1 AND channel = 'whatsapp' AND value = $2`, [organizationId, waId])).toHaveLength(1);
    const stored = () => world.sql<{ body: string; contact_id: string }>(`SELECT body, contact_id FROM "${world.schema('messaging')}".messages WHERE external_id = $1`, [wamid]);
    await eventually(async () => (await stored()).length === 1);
    const [message] = await stored();
    expect(message.body).toBe('STOP \uFFFD');
    const [contact] = await world.sql<{ opted_out_at: Date | null }>(`SELECT opted_out_at FROM "${world.schema('messaging')}".contacts WHERE id = $1`, [message.contact_id]);
    expect(contact.opted_out_at).not.toBeNull();
  });

  it('hands the inbound webhooks of one number that arrive together to messaging in fewer calls, each answered 200 with its message stored under its own sender name', async () => {
    const organizationId = (await gatewayBuilders(gateway).organizationWithKey({ scopes: ['messaging:read'] })).organizationId;
    const phoneNumberId = `pn-${randomUUID()}`;
    await registerSender(world, organizationId, phoneNumberId);
    const senders = Array.from({ length: 12 }, (_, i) => ({ wamid: newWamid(), waId: `55119600${String(10000 + i)}`, name: `Person ${i}` }));
    const { calls, result: answers } = await recordRpcCalls(
      gateway,
      MessagingWhatsAppRpc.Inbound,
      (data: { messages?: unknown[] }) => data.messages?.length ?? 0,
      () =>
        Promise.all(
          senders.map(({ wamid, waId, name }) => {
            const inbound = inboundText(wamid, waId, `hello from ${name}`, Math.floor(Date.now() / 1000), phoneNumberId);
            const value = { messaging_product: 'whatsapp', metadata: { display_phone_number: '5511912345678', phone_number_id: phoneNumberId }, contacts: [{ wa_id: waId, profile: { name } }], messages: inbound.messages };
            const raw = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '100000000000001', changes: [{ field: 'messages', value }] }] });
            const signature = `sha256=${createHmac('sha256', world.config(GatewayConfig).META_APP_SECRET).update(raw).digest('hex')}`;
            return http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature } });
          }),
        ),
    );
    expect(answers.map((a) => a.status)).toEqual(senders.map(() => 200));
    // Every message went over; the webhooks that came in while a hand-over was under way went in the next one together.
    expect(calls.reduce((a, b) => a + b, 0)).toBe(12);
    expect(calls.length).toBeLessThan(12);
    expect(Math.max(...calls)).toBeGreaterThan(1);
    // Each message stored with its own sender's contact and profile name, though they travelled together.
    const stored = () =>
      world.sql<{ external_id: string; phone: string; name: string | null }>(`SELECT m.external_id, c.phone, c.name FROM "${world.schema('messaging')}".messages m JOIN "${world.schema('messaging')}".contacts c ON c.id = m.contact_id WHERE m.external_id = ANY($1::text[])`, [
        senders.map((s) => s.wamid),
      ]);
    await eventually(async () => (await stored()).length === senders.length, 15_000);
    const byWamid = new Map((await stored()).map((r) => [r.external_id, r]));
    for (const s of senders) expect({ phone: byWamid.get(s.wamid)!.phone.replace(/\D/g, ''), name: byWamid.get(s.wamid)!.name }).toEqual({ phone: s.waId, name: s.name });
  });

  it('stores a signed Meta webhook whose message and status hold a NUL (a \\u0000 escape), each NUL as U+FFFD, and acknowledges it', async () => {
    const organizationId = (await gatewayBuilders(gateway).organizationWithKey({ scopes: ['messaging:read'] })).organizationId;
    const phoneNumberId = `pn-${randomUUID()}`;
    await registerSender(world, organizationId, phoneNumberId);
    const wamid = newWamid();
    const statusWamid = newWamid();
    const failed = { id: statusWamid, status: 'failed', timestamp: String(Math.floor(Date.now() / 1000)), recipient_id: '5511960008888', errors: [{ code: 131026, title: 'Message undeliverable\u0000' }] };
    const value = { messaging_product: 'whatsapp', metadata: { display_phone_number: '5511912345678', phone_number_id: phoneNumberId }, ...inboundText(wamid, '5511960008888', 'oi\u0000tudo bem', Math.floor(Date.now() / 1000), phoneNumberId), statuses: [failed] };
    const raw = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '100000000000001', changes: [{ field: 'messages', value }] }] });
    expect(raw).toContain('\\u0000');
    const signature = `sha256=${createHmac('sha256', world.config(GatewayConfig).META_APP_SECRET).update(raw).digest('hex')}`;

    const res = await http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature } });
    expect(res.status).toBe(200);
    const [status] = await world.sql<{ body: { errors: { title: string }[] } }>(`SELECT body FROM "${world.schema('outbox-dispatcher')}".provider_statuses WHERE provider_message_id = $1`, [statusWamid]);
    expect(status.body.errors[0].title).toBe('Message undeliverable\uFFFD');
    const stored = () => world.sql<{ body: string }>(`SELECT body FROM "${world.schema('messaging')}".messages WHERE external_id = $1`, [wamid]);
    await eventually(async () => (await stored()).length === 1);
    expect((await stored())[0].body).toBe('oi\uFFFDtudo bem');
  });

  it('lists conversations, reads a thread newest first, lets an operator write and resolve', async () => {
    const pnid = 'pn-gw-1';
    await registerSender(world, key.organizationId, pnid);
    const inbound = inboundPipeline(messaging);
    await inbound.whatsapp(inboundText(newWamid(), '5511944445555', 'first question', 1_760_200_000, pnid));
    await inbound.whatsapp(inboundText(newWamid(), '5511944445555', 'second question', 1_760_200_010, pnid));

    const list = await http('GET', '/conversations?channel=whatsapp&status=open', { secret: key.secret });
    expect(list.status).toBe(200);
    const conversation = list.body.items[0];
    expect(conversation).toMatchObject({ channel: 'whatsapp', status: 'open', active_instance_message_count: 2 });
    expect((await http('GET', '/conversations', { secret: other.secret })).body.items).toEqual([]);

    const sent = await http('POST', `/conversations/${conversation.id}/messages`, { secret: key.secret, json: { idempotency_key: 'op-1', text: 'Hi, Ana here' } });
    expect(sent.status).toBe(201);
    const again = await http('POST', `/conversations/${conversation.id}/messages`, { secret: key.secret, json: { idempotency_key: 'op-1', text: 'Hi, Ana here' } });
    expect(again.body).toMatchObject({ message_id: sent.body.message_id, created: false });
    // The same key for another text is a client mistake, not a retry: 409, nothing written.
    const reused = await http('POST', `/conversations/${conversation.id}/messages`, { secret: key.secret, json: { idempotency_key: 'op-1', text: 'Something else entirely' } });
    expect(reused.status).toBe(409);
    expect(reused.body.error).toMatchObject({ code: 'idempotency_conflict', details: { field: 'idempotency_key', message_id: sent.body.message_id } });
    expect(await world.sql(`SELECT 1 FROM "${world.schema('messaging')}".messages WHERE body = 'Something else entirely'`)).toEqual([]);
    const handoffs = (await outboxEvents<{ message_id: string; operator_id: string }>(world, 'messaging', 'messaging.human_message_sent')).filter((e) => e.payload.data.message_id === sent.body.message_id);
    expect(handoffs).toHaveLength(1);
    expect(handoffs[0].payload.data.operator_id).toBe(key.memberId);

    const thread = await http('GET', `/conversations/${conversation.id}/messages?limit=2`, { secret: key.secret });
    expect(thread.body.items.map((m: { body: string; direction: string }) => [m.direction, m.body])).toEqual([
      ['outbound', 'Hi, Ana here'],
      ['inbound', 'second question'],
    ]);
    const older = await http('GET', `/conversations/${conversation.id}/messages?limit=2&cursor=${thread.body.next_cursor}`, { secret: key.secret });
    expect(older.body.items.map((m: { body: string }) => m.body)).toEqual(['first question']);

    const resolved = await http('POST', `/conversations/${conversation.id}/resolve`, { secret: key.secret });
    expect(resolved.body.status).toBe('resolved');
    expect((await outboxEvents<{ conversation_id: string }>(world, 'messaging', 'messaging.conversation.resolved')).filter((e) => e.payload.data.conversation_id === conversation.id)).toHaveLength(1);
    expect((await http('GET', `/conversations/${conversation.id}`, { secret: other.secret })).status).toBe(404);
  });

  it('creates, reads and lists notifications from a template', async () => {
    const contact = await http('POST', '/contacts', { secret: key.secret, json: { name: 'Bruno Example', phone: '+5511922223333' } });
    // The contact never wrote on WhatsApp (its 24-hour window is closed): the approved template goes.
    const whatsappTemplate = { name: 'payment_received', language: 'en_US', parameters: ['name', 'amount'] };
    const put = await http('PUT', '/notification-templates/payment_received', { secret: key.secret, json: { title: 'Payment', body: 'Hi {{name}}, we got {{amount}}.', whatsapp_template: whatsappTemplate } });
    expect([put.status, put.body.whatsapp_template]).toEqual([200, whatsappTemplate]);
    const missing = await http('POST', '/notifications', { secret: key.secret, json: { contact_id: contact.body.id, template_key: 'payment_received', variables: { name: 'Bruno' }, channels: ['whatsapp'] } });
    expect(missing.body.error).toMatchObject({ code: 'validation_failed', details: { missing: ['amount'] } });
    const created = await http('POST', '/notifications', {
      secret: key.secret,
      json: { contact_id: contact.body.id, template_key: 'payment_received', variables: { name: 'Bruno', amount: 'R$ 10' }, channels: ['whatsapp', 'in_app'], idempotency_key: 'pay-1' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ body: 'Hi Bruno, we got R$ 10.', title: 'Payment' });
    expect(created.body.deliveries.map((d: { channel: string; status: string }) => [d.channel, d.status]).sort()).toEqual([
      ['in_app', 'sent'],
      ['whatsapp', 'pending'],
    ]);
    // A retry (same request, keys and channels in another order) answers the same notification; another request with the key is refused.
    const retry = await http('POST', '/notifications', {
      secret: key.secret,
      json: { idempotency_key: 'pay-1', channels: ['in_app', 'whatsapp'], variables: { amount: 'R$ 10', name: 'Bruno' }, template_key: 'payment_received', contact_id: contact.body.id },
    });
    expect([retry.status, retry.body.id]).toEqual([201, created.body.id]);
    const reused = await http('POST', '/notifications', { secret: key.secret, json: { contact_id: contact.body.id, body: 'other', channels: ['in_app'], idempotency_key: 'pay-1' } });
    expect([reused.status, reused.body.error]).toEqual([409, { code: 'idempotency_conflict', message: expect.any(String), details: { field: 'idempotency_key', notification_id: created.body.id } }]);
    expect((await http('GET', `/notifications/${created.body.id}`, { secret: key.secret })).body.id).toBe(created.body.id);
    expect((await http('GET', `/notifications?contact_id=${contact.body.id}`, { secret: key.secret })).body.items).toHaveLength(1);
    expect((await http('GET', `/notifications/${created.body.id}`, { secret: other.secret })).status).toBe(404);
  });

  it('streams the organization’s events as SSE and resumes after Last-Event-ID', async () => {
    // Open a stream, then cause two events.
    const streaming = readEvents(`${base}/events/stream?types=messaging.contact.created`, key.secret, {}, 2, 6000);
    await streaming.opened;
    await http('POST', '/contacts', { secret: key.secret, json: { name: 'Stream One', email: 'one@example.com' } });
    await http('POST', '/contacts', { secret: other.secret, json: { name: 'Other tenant', email: 'x@example.com' } });
    await http('POST', '/contacts', { secret: key.secret, json: { name: 'Stream Two', email: 'two@example.com' } });
    const got = await streaming;
    expect(got.status).toBe(200);
    expect(got.contentType).toContain('text/event-stream');
    expect(got.events.map((e) => e.event)).toEqual(['messaging.contact.created', 'messaging.contact.created']);
    expect(got.events.map((e) => e.data?.email)).toEqual(['one@example.com', 'two@example.com']);

    // Missed while disconnected: a third contact; resuming after the first event replays two and three.
    await http('POST', '/contacts', { secret: key.secret, json: { name: 'Stream Three', email: 'three@example.com' } });
    const resumed = await readEvents(`${base}/events/stream?types=messaging.contact.created`, key.secret, { 'last-event-id': got.events[0].id! }, 2, 4000);
    expect(resumed.events.map((e) => e.data?.email)).toEqual(['two@example.com', 'three@example.com']);

    expect((await http('GET', '/events/stream', {})).status).toBe(401);
  });
});
