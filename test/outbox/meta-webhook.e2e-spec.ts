import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { OutboxRpc } from '@touchpoint/contracts';
import { Clock } from '@touchpoint/time';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, recordRpcCalls, type SeededKey } from '../gateway/gateway-world.js';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

const APP_SECRET = 'test-meta-app-secret';
const VERIFY_TOKEN = 'test-verify-token';
const sign = (raw: string, secret = APP_SECRET) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
const fixture = (name: string) => readFileSync(new URL(`../../../shared/fixtures/meta/${name}`, import.meta.url), 'utf8');

/**
 * Meta webhook ingress through the gateway, end to end with the sandbox firing signed webhooks:
 * the challenge, the signature over the raw body (401 and nothing stored on a mismatch), statuses
 * settling sends in the dispatcher, 503 when an owner cannot store, and sender administration.
 */
describe('Meta webhooks and senders through the gateway', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let gateway: NestFastifyApplication;
  let d: Dispatcher;
  let http: ReturnType<typeof httpClient>;
  let admin: SeededKey;
  let senderId: string;
  const phoneNumberId = '100000000000002';
  const schema = () => world.schema('outbox-dispatcher');
  const storedStatuses = async () => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema()}".provider_statuses`))[0].n;
  const entry = async (id: string) => (await world.sql<Record<string, unknown>>(`SELECT * FROM "${schema()}".message_outbox WHERE id = $1`, [id]))[0];

  beforeAll(async () => {
    world = await createTestWorld('outbox_meta');
    sandbox = await SandboxHandle.start({ META_APP_SECRET: APP_SECRET });
    d = await startDispatcher(world, sandbox, { WHATSAPP_SEND_TIMEOUT_MS: '400' }, new Clock() as never);
    const config = world.config(GatewayConfig, { META_APP_SECRET: APP_SECRET, META_VERIFY_TOKEN: VERIFY_TOKEN, RPC_TIMEOUT_MS: '1500' });
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    const url = (await gateway.getUrl()).replace('[::1]', '127.0.0.1');
    http = httpClient(url);
    admin = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin'] });
    await sandbox.post('/sandbox/meta/settings', { webhook_url: `${url}/webhooks/meta`, status_webhooks: true, statuses: ['sent', 'delivered'], webhook_retries: 0 });
    // The business number and the tokens that own it at the sandbox's Graph (a sender proves it).
    for (const token of ['secret-graph-token', 'rotated-token', 'new-token']) await sandbox.post('/sandbox/meta/numbers', { phone_number_id: phoneNumberId, access_token: token });
  }, 60_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  describe('senders', () => {
    it('adds, lists and updates a sender without ever returning its token', async () => {
      const created = await http('POST', '/senders', {
        secret: admin.secret,
        json: { channel: 'whatsapp', phone_number_id: phoneNumberId, display_phone_number: '5511912345678', business_account_id: '100000000000001', access_token: 'secret-graph-token' },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ organization_id: admin.organizationId, phone_number_id: phoneNumberId, is_default: true, status: 'connected', has_credentials: true });
      expect(JSON.stringify(created.body)).not.toContain('secret-graph-token');
      senderId = created.body.id;

      const list = await http('GET', '/senders', { secret: admin.secret });
      expect(list.body.items.map((s: { id: string }) => s.id)).toEqual([senderId]);
      const patched = await http('PATCH', `/senders/${senderId}`, { secret: admin.secret, json: { label: 'Support line', access_token: 'rotated-token' } });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ label: 'Support line' });
      expect(JSON.stringify(patched.body)).not.toContain('rotated-token');
      expect((await d.senders.credentialsFor(senderId))?.secrets.access_token).toBe('rotated-token');

      const duplicate = await http('POST', '/senders', { secret: admin.secret, json: { channel: 'whatsapp', phone_number_id: phoneNumberId, display_phone_number: '5511900000000', business_account_id: '1', access_token: 'rotated-token' } });
      expect(duplicate.status).toBe(409);
    });

    it('adds an email mailbox and a LinkedIn account over REST, never returning their API keys', async () => {
      const owner = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin'] });
      await sandbox.post('/sandbox/nylas/grants', { grant_id: `grant-${owner.organizationId}`, api_key: 'nylas-secret-key', email: 'sales@example.com' });
      await sandbox.post('/sandbox/unipile/accounts', { account_id: `unipile-${owner.organizationId}`, api_key: 'unipile-secret-key' });
      const mailbox = await http('POST', '/senders/accounts', {
        secret: owner.secret,
        json: { channel: 'email', account_id: `grant-${owner.organizationId}`, address: 'sales@example.com', api_key: 'nylas-secret-key', provider: 'google' },
      });
      expect(mailbox.status).toBe(201);
      expect(mailbox.body).toMatchObject({ organization_id: owner.organizationId, channel: 'email', is_default: true, status: 'connected', has_credentials: true });
      const linkedin = await http('POST', '/senders/accounts', {
        secret: owner.secret,
        json: { channel: 'linkedin', account_id: `unipile-${owner.organizationId}`, address: 'ACoAAB-member', api_key: 'unipile-secret-key' },
      });
      expect(linkedin.status).toBe(201);
      expect(JSON.stringify([mailbox.body, linkedin.body])).not.toMatch(/nylas-secret-key|unipile-secret-key/);
      const list = await http('GET', '/senders', { secret: owner.secret });
      expect(list.body.items.map((s: { channel: string }) => s.channel).sort()).toEqual(['email', 'linkedin']);
      const bad = await http('POST', '/senders/accounts', { secret: owner.secret, json: { channel: 'whatsapp', account_id: 'x', address: 'x@y.z', api_key: 'k' } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('validation_failed');
    });

    it('needs the admin scope and hides other organizations’ senders', async () => {
      const reader = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['messaging:read'] });
      expect((await http('GET', '/senders', { secret: reader.secret })).status).toBe(403);
      const other = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin'] });
      expect((await http('GET', `/senders/${senderId}`, { secret: other.secret })).status).toBe(404);
      expect((await http('DELETE', `/senders/${senderId}`, { secret: other.secret })).status).toBe(404);
    });
  });

  describe('GET /webhooks/meta', () => {
    it('echoes the challenge for our verify token, and refuses any other', async () => {
      const ok = await http('GET', `/webhooks/meta?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444`);
      expect([ok.status, ok.body]).toEqual([200, 1158201444]);
      expect((await http('GET', '/webhooks/meta?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1')).status).toBe(403);
    });
  });

  describe('POST /webhooks/meta', () => {
    it.each([
      ['a wrong secret', (raw: string) => sign(raw, 'not-the-secret')],
      ['a missing header', () => undefined],
      ['a signature of other bytes', (raw: string) => sign(`${raw} `)],
    ])('answers 401 and stores nothing for %s', async (_name, signature) => {
      const raw = fixture('webhook-status-delivered.json');
      const before = await storedStatuses();
      const sig = signature(raw);
      const res = await http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', ...(sig ? { 'x-hub-signature-256': sig } : {}) } });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
      expect(await storedStatuses()).toBe(before);
    });

    it('stores a signed status fixture and answers 200 (the signature is over the raw bytes, whitespace included)', async () => {
      const raw = fixture('webhook-status-read.json');
      const res = await http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(raw) } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ received: true, statuses: 1 });
      const [row] = await world.sql<{ status: string; resolution_outcome: string }>(`SELECT status, resolution_outcome FROM "${schema()}".provider_statuses WHERE provider_message_id = $1`, [JSON.parse(raw).entry[0].changes[0].value.statuses[0].id]);
      expect(row).toEqual({ status: 'read', resolution_outcome: 'no_correlation' });
    });

    it('hands the status webhooks of one number that arrive together to the dispatcher in fewer calls, each answered 200 with its statuses stored', async () => {
      const template = JSON.parse(fixture('webhook-status-read.json'));
      const ids = Array.from({ length: 12 }, (_, i) => `wamid.grouped-${Date.now()}-${i}`);
      const { calls, result: answers } = await recordRpcCalls(
        gateway,
        OutboxRpc.WhatsAppStatuses,
        (data: { statuses?: unknown[] }) => data.statuses?.length ?? 0,
        () =>
          Promise.all(
            ids.map((id) => {
              const body = structuredClone(template);
              body.entry[0].changes[0].value.statuses[0].id = id;
              const raw = JSON.stringify(body);
              return http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(raw) } });
            }),
          ),
      );
      expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
      const stored = await world.sql<{ provider_message_id: string }>(`SELECT provider_message_id FROM "${schema()}".provider_statuses WHERE provider_message_id = ANY($1::text[])`, [ids]);
      expect(stored.map((r) => r.provider_message_id).sort()).toEqual([...ids].sort());
      // Every status went over, and the webhooks that came in while a hand-over was under way went in the next one together.
      expect(calls.reduce((a, b) => a + b, 0)).toBe(12);
      expect(calls.length).toBeLessThan(12);
      expect(Math.max(...calls)).toBeGreaterThan(1);
    });

    it('answers 200 (ignored), never a 5xx Meta would retry forever, to signed bodies of other shapes', async () => {
      for (const body of [
        { object: 'whatsapp_business_account', entry: [{ changes: { a: 1 } }] },
        { object: 'whatsapp_business_account', entry: [null, { changes: 'x' }] },
        { object: 'page', entry: [] },
      ]) {
        const raw = JSON.stringify(body);
        const res = await http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(raw) } });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ received: true, statuses: 0, messages: 0 });
      }
    });

    it('settles a timed-out send from the sandbox’s signed delivered status', async () => {
      const to = '5511977770001';
      await sandbox.post('/sandbox/meta/settings', { status_delay_ms: 1500 });
      await sandbox.fault({ kind: 'timeout', hold_ms: 5000, match: { wa_id: to } });
      const { entry_id } = await d.enqueue.enqueue(textTo(admin.organizationId, to));
      await d.drain.drain(3000);
      expect((await entry(entry_id)).status).toBe('ambiguous');
      await eventually(async () => (await entry(entry_id)).status === 'accepted', 10_000, 100);
      const row = await entry(entry_id);
      expect(row).toMatchObject({ resolution: 'accepted', resolved_by: 'provider' });
      expect(row.provider_message_id).toBe((await sandbox.received(to))[0].provider_id);
      expect(await sandbox.received(to)).toHaveLength(1);
    });

    it('settles a send accepted when the status arrived while it was still on the wire', async () => {
      const to = '5511977770002';
      await sandbox.post('/sandbox/meta/settings', { status_delay_ms: 30 });
      await sandbox.fault({ kind: 'timeout', hold_ms: 5000, match: { wa_id: to } });
      const { entry_id } = await d.enqueue.enqueue(textTo(admin.organizationId, to));
      await d.drain.drain(3000);
      const row = await entry(entry_id);
      expect(row).toMatchObject({ status: 'accepted', evidence: expect.objectContaining({ status: expect.stringMatching(/sent|delivered/) }) });
      expect(row.provider_message_id).toBe((await sandbox.received(to))[0].provider_id);
    });

    it('answers 503 for an inbound message when messaging cannot confirm storing it', async () => {
      const delivery = await sandbox.post<{ status: number; response: string }>('/sandbox/meta/inbound', { from: '5511987654321', text: 'Does it come in another color?', phone_number_id: phoneNumberId });
      expect(delivery.status).toBe(503);
      expect(JSON.parse(delivery.response).error.code).toBe('service_unavailable');
    });
    it('answers every inbound webhook of a number 503 within about one RPC deadline while messaging does not answer, however many queue up', async () => {
      const template = JSON.parse(fixture('webhook-message-text.json'));
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 25 }, async (_, i) => {
          const body = structuredClone(template);
          body.entry[0].changes[0].value.metadata.phone_number_id = phoneNumberId;
          body.entry[0].changes[0].value.messages[0].id = `wamid.unanswered-${Date.now()}-${i}`;
          const raw = JSON.stringify(body);
          const res = await http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(raw) } });
          return { status: res.status, ms: Date.now() - started };
        }),
      );
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 503));
      // RPC_TIMEOUT_MS is 1.5 s: the webhooks that queued behind the first hand-over fail with it,
      // not one deadline later each (they took 3 s and more before).
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(2500);
    });
  });

  describe('removing a sender', () => {
    it('stops listing it, publishes outbox.sender.removed, and frees its number', async () => {
      expect((await http('DELETE', `/senders/${senderId}`, { secret: admin.secret })).status).toBe(200);
      expect((await http('GET', '/senders', { secret: admin.secret })).body.items).toEqual([]);
      expect((await http('GET', `/senders/${senderId}`, { secret: admin.secret })).status).toBe(404);
      const [event] = await world.sql<{ payload: unknown }>(`SELECT payload FROM "${schema()}".outbox_events WHERE type = 'outbox.sender.removed' AND payload->'data'->>'sender_id' = $1`, [senderId]);
      expect(event.payload).toMatchObject({ organization_id: admin.organizationId, data: { sender_id: senderId, status: 'removed', phone_number_id: phoneNumberId } });
      const again = await http('POST', '/senders', { secret: admin.secret, json: { channel: 'whatsapp', phone_number_id: phoneNumberId, display_phone_number: '5511912345678', business_account_id: '100000000000001', access_token: 'new-token' } });
      expect(again.status).toBe(201);
    });
  });
});
