import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHmac, randomUUID } from 'node:crypto';
import { OutboxAccountRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { aMetaTextWebhook, aWhatsAppNumber, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { setLimits } from '../messaging/helpers.js';
import { type Dispatcher, SandboxHandle, startDispatcher } from './harness.js';

const APP_SECRET = 'test-meta-app-secret';
/** The business number of the fixtures (fixtures/README). */
export const PHONE_NUMBER_ID = '100000000000002';

/** Waits for a fact across services on a busy machine (up to 30 s). */
export const soon = <T>(probe: () => Promise<T>) => eventually(probe, 30_000, 100);

/**
 * gateway → messaging (+ abuse) → outbox-dispatcher → the sandbox's Meta and Nylas, in one test
 * world, driven the way a client and the providers drive it: REST with an API key, Meta webhooks
 * signed with the app secret. The dispatcher drains by hand on its own clock (`drain`), so a test
 * decides when the send lane runs; what reached the provider is read from the sandbox.
 */
export interface WireWorld {
  world: TestWorld;
  sandbox: SandboxHandle;
  d: Dispatcher;
  /** The messaging app (its services, e.g. the outcome sweep, are run by hand). */
  messaging: NestFastifyApplication;
  gateway: NestFastifyApplication;
  http: ReturnType<typeof httpClient>;
  key: SeededKey;
  org: string;
  mailbox: { grant: string; senderId: string };
  /** POSTs a Meta webhook body to `/webhooks/meta`, signed like Meta signs it. */
  meta(body: unknown): Promise<{ status: number; body: unknown }>;
  /** Drains the dispatcher `rounds` times, moving its clock past the pair pacing (6.5 s) between rounds. */
  drain(rounds?: number): Promise<void>;
  /** Emails the sandbox's Nylas was asked to send to `to`. */
  emailsTo(to: string): Promise<unknown[]>;
  /** `message_outbox` rows whose log context names `messageId`. */
  entriesOf(messageId: string): Promise<(Record<string, unknown> & { id: string })[]>;
  close(): Promise<void>;
}

/**
 * @param messagingEnv overrides of messaging's test settings (e.g. `INBOUND_POLL_MS: '0'` holds the receipt worker)
 * @param dispatcherEnv overrides of the dispatcher's (e.g. a longer `WHATSAPP_SEND_TIMEOUT_MS` for sends the sandbox holds)
 */
export async function startWireWorld(label: string, messagingEnv: Record<string, string> = {}, dispatcherEnv: Record<string, string> = {}): Promise<WireWorld> {
  const world = await createTestWorld(label);
  const sandbox = await SandboxHandle.start({ META_APP_SECRET: APP_SECRET });
  const d = await startDispatcher(world, sandbox, { NYLAS_API_BASE_URL: sandbox.url, NYLAS_SEND_TIMEOUT_MS: '1000', WHATSAPP_SEND_TIMEOUT_MS: '1000', ...dispatcherEnv });
  await world.start(AbuseModule.forRoot(world.config(AbuseConfig, { ABUSE_EXPIRY_INTERVAL_MS: '0' })));
  const messaging: NestFastifyApplication = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', OUTCOME_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ...messagingEnv })));
  const config = world.config(GatewayConfig, { META_APP_SECRET: APP_SECRET });
  const gateway: NestFastifyApplication = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
  const http = httpClient((await gateway.getUrl()).replace('[::1]', '127.0.0.1'));
  const key = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin', 'messaging:read', 'messaging:write'] });
  const org = key.organizationId;
  await setLimits(world, org, {});
  const senderId = await aWhatsAppNumber(d, org, PHONE_NUMBER_ID);
  const grant = `grant-${randomUUID()}`;
  await sandbox.post('/sandbox/nylas/grants', { grant_id: grant, api_key: 'nylas-key', email: 'support@ours.example', provider: 'google' });
  const mailbox = await d.app.get(RpcClient).callUnchecked<{ id: string }>('outbox-dispatcher', OutboxAccountRpc.Create, { organization_id: org, channel: 'email', account_id: grant, address: 'support@ours.example', api_key: 'nylas-key', provider: 'google' });
  // The dispatcher announces the number; messaging routes inbound webhooks by its read model.
  await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('messaging')}".whatsapp_senders WHERE phone_number_id = $1 AND sender_id = $2`, [PHONE_NUMBER_ID, senderId])).length === 1);

  return {
    world,
    sandbox,
    d,
    messaging,
    gateway,
    http,
    key,
    org,
    mailbox: { grant, senderId: mailbox.id },
    meta: async (body) => {
      const raw = JSON.stringify(body);
      return http('POST', '/webhooks/meta', { body: raw, headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', APP_SECRET).update(raw).digest('hex')}` } });
    },
    drain: async (rounds = 2) => {
      for (let i = 0; i < rounds; i++) {
        if (i > 0) d.clock.advance(7000);
        await d.drain.drain(5000);
      }
    },
    emailsTo: async (to) => {
      const { calls } = await sandbox.get<{ calls: { operation: string; body: { to?: { email: string }[] } }[] }>('/sandbox/control/nylas/received');
      return (calls ?? []).filter((c) => c.operation === 'send' && (c.body.to ?? []).some((r) => r.email.toLowerCase() === to.toLowerCase()));
    },
    entriesOf: (messageId) => world.sql(`SELECT * FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE log_context->>'message_id' = $1 ORDER BY seq`, [messageId]),
    close: async () => {
      await world.close();
      await sandbox.close();
    },
  };
}

let seconds = Math.floor(Date.now() / 1000);

/** A Meta `messages` webhook with one inbound text from `waId` (fixtures/meta/webhook-message-text.json). */
export function inboundWebhook(waId: string, text: string, wamid = `wamid.${randomUUID().replace(/-/g, '')}`) {
  return aMetaTextWebhook({ from: waId, text, wamid, timestampSeconds: (seconds += 2), phoneNumberId: PHONE_NUMBER_ID });
}

/** A Meta status webhook for one send (fixtures/meta/webhook-status-*.json); `failed` carries an error. */
export function statusWebhook(wamid: string, recipient: string, status: 'sent' | 'delivered' | 'read' | 'failed', timestampSeconds: number, errorCode = 131026) {
  const one: Record<string, unknown> = { id: wamid, status, timestamp: String(timestampSeconds), recipient_id: recipient };
  if (status === 'failed') one.errors = [{ code: errorCode, title: 'Message undeliverable.', message: 'Message undeliverable.' }];
  return {
    object: 'whatsapp_business_account',
    entry: [{ id: '100000000000001', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '5511912345678', phone_number_id: PHONE_NUMBER_ID }, statuses: [one] } }] }],
  };
}
