import amqplib from 'amqplib';
import { DateTime } from 'luxon';
import { randomUUID } from 'node:crypto';
import {
  type BusMessage,
  type CampaignCreateData,
  type CampaignView,
  type ContactCreateData,
  type ContactView,
  type FlowCreateData,
  type FlowGraph,
  type FlowNode,
  type FlowPublishData,
  type FlowSetStatusData,
  type FlowSettings,
  type FlowView,
  type MessageReceivedData,
  MessagingEvents,
  MessagingRpc,
  OutboxAccountRpc,
  OutboxEvents,
  type OutboxSenderEventData,
  OutreachRpc,
  PlatformRpc,
  type ServiceName,
} from '@touchpoint/contracts';
import type { RpcClient } from '@touchpoint/runtime';
import { eventually } from './barriers.js';
import type { TestWorld } from './index.js';

/**
 * Builders for test rows and messages (STYLE "Tests": builders with sensible defaults). `aX(...)`
 * returns data; `anX(world, ...)` / `aX(world, ...)` with a world also makes it exist and waits
 * until the services that must know it do. Every default can be overridden.
 */

export const HOUR = 3_600_000;

/**
 * The last weekday (Mon–Fri) at `hour`:00 in `zone` before now: inside the seed example's window
 * (Mon–Fri 9–20 São Paulo), and before a contact's real messages, so those are not replies to
 * enrollments made "then". For a `FixedClock` in tests that also use real time.
 */
export function lastWeekdayMorning(zone = 'America/Sao_Paulo', hour = 10): Date {
  let day = DateTime.now().setZone(zone).set({ hour, minute: 0, second: 0, millisecond: 0 });
  while (day.weekday > 5 || day.toMillis() > Date.now()) day = day.minus({ days: 1 });
  return day.toJSDate();
}

/** Settings of a flow whose window is always open (tests that are not about the window). */
export const ALWAYS_OPEN = { send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' };

/** A step of a linear flow: a node without the edges (`aFlow` links the steps in order). */
export type FlowStep = FlowNode;

/** A text send step. */
export const textStep = (id: string, body: string): FlowStep => ({ id, type: 'action', config: { mode: 'text', body } });
/** A fixed wait step of `durationMs` milliseconds. */
export const waitStep = (id: string, durationMs: number): FlowStep => ({ id, type: 'wait', config: { mode: 'fixed', duration_ms: durationMs } });
/** A tag step (no send: needs no conversation to publish). */
export const tagStep = (id: string, tags: string[]): FlowStep => ({ id, type: 'action', config: { mode: 'tag', tags } });

export interface FlowShape {
  graph: FlowGraph;
  settings: FlowSettings;
}

/**
 * A linear flow `t` (trigger) → steps → `e` (end), each edge `always`, ids `e1`, `e2`, … in order.
 * Defaults: one text step `a` ("Oi"), a manual trigger that stops on a reply, handoff `pause`,
 * the window always open.
 * @param o.trigger merged into the manual default trigger
 * @param o.settings merged over the default settings (after `trigger`)
 * @param o.end the end node's config (`{ outcome: 'exhausted' }`, …); `{}` by default
 */
export function aFlow(o: { steps?: FlowStep[]; trigger?: Partial<FlowSettings['trigger']>; settings?: Partial<FlowSettings>; end?: Record<string, unknown> } = {}): FlowShape {
  const steps = o.steps ?? [textStep('a', 'Oi')];
  const nodes: FlowNode[] = [{ id: 't', type: 'trigger', config: {} }, ...steps, { id: 'e', type: 'end', config: o.end ?? {} }];
  const edges = nodes.slice(1).map((node, i) => ({ id: `e${i + 1}`, source: nodes[i]!.id, target: node.id, condition: { type: 'always' as const } }));
  return {
    graph: { nodes, edges },
    settings: { trigger: { kind: 'manual', cancel_on_reply: true, ...o.trigger }, handoff_policy: 'pause', ...ALWAYS_OPEN, ...o.settings },
  };
}

/** trigger → wait 1 h (`w`) → tag (`a`) → end: a flow that stays live and needs no conversation to publish. */
export function aWaitingFlow(trigger: FlowSettings['trigger'], tags = ['seguido']): FlowShape {
  return aFlow({ steps: [waitStep('w', HOUR), tagStep('a', tags)], trigger });
}

/** trigger → text `a1` → wait (`w`, 1 h) → text `a2` → end (`exhausted`): two sends a wait apart. */
export function aTwoTextFlow(o: { first?: string; second?: string; waitMs?: number; cancelOnReply?: boolean } = {}): FlowShape {
  return aFlow({
    steps: [textStep('a1', o.first ?? 'Primeira'), waitStep('w', o.waitMs ?? HOUR), textStep('a2', o.second ?? 'Segunda')],
    end: { outcome: 'exhausted' },
    trigger: { cancel_on_reply: o.cancelOnReply ?? true },
  });
}

/** The three calls of followups' flows service that take a flow from draft to active. */
export interface FlowsApi {
  create(input: FlowCreateData): Promise<FlowView>;
  publish(input: FlowPublishData): Promise<FlowView>;
  setStatus(input: FlowSetStatusData): Promise<FlowView>;
}

/** Creates, publishes and activates a flow (default: `aFlow()`); returns its id. */
export async function anActiveFlow(flows: FlowsApi, organizationId: string, flow: FlowShape & { name?: string } = aFlow()): Promise<string> {
  const created = await flows.create({ organization_id: organizationId, name: flow.name ?? `flow ${randomUUID().slice(0, 6)}`, graph: flow.graph, settings: flow.settings });
  const published = await flows.publish({ organization_id: organizationId, flow_id: created.id, expected_revision: 1 });
  await flows.setStatus({ organization_id: organizationId, flow_id: created.id, expected_revision: published.revision, status: 'active' });
  return created.id;
}

/**
 * Publishes an event on the world's bus as its owner would (messaging, the dispatcher), so the
 * consumers receive it through the broker like any other. `when` is its `occurred_at` (default
 * now), or options: `eventId` (default a new uuid), `times: 2` delivers the same message twice, as
 * a broker redelivery would (same event id).
 */
export async function publishEvent<T>(world: TestWorld, type: string, organizationId: string, data: T, when: Date | { occurredAt?: Date; eventId?: string; times?: number } = {}, times = 1): Promise<BusMessage<T>> {
  const o = when instanceof Date || typeof (when as Date).toISOString === 'function' ? { occurredAt: when as Date, times } : (when as { occurredAt?: Date; eventId?: string; times?: number });
  const message: BusMessage<T> = { event_id: o.eventId ?? randomUUID(), type, organization_id: organizationId, occurred_at: (o.occurredAt ?? new Date()).toISOString(), data };
  const connection = await amqplib.connect(world.amqpUrl);
  try {
    const channel = await connection.createConfirmChannel();
    for (let i = 0; i < (o.times ?? 1); i++) {
      channel.publish(`${world.namespace}.events`, type, Buffer.from(JSON.stringify(message)), { persistent: true, messageId: message.event_id, contentType: 'application/json', type });
    }
    await channel.waitForConfirms();
    await channel.close();
  } finally {
    await connection.close();
  }
  return message;
}

/**
 * Tells followups (as the dispatcher would, `outbox.sender.connected`) that a WhatsApp sender is
 * connected, and waits until its read model has the row. Default: a new id, the default sender.
 * @returns the sender id
 */
export async function aConnectedSender(world: TestWorld, organizationId: string, overrides: Partial<OutboxSenderEventData> = {}): Promise<string> {
  const data: OutboxSenderEventData = { sender_id: randomUUID(), channel: 'whatsapp', is_default: true, status: 'connected', ...overrides };
  await publishEvent(world, OutboxEvents.SenderConnected, organizationId, data);
  await eventually(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".senders WHERE sender_id = $1`, [data.sender_id])).length === 1);
  return data.sender_id;
}

/** A control API of the sandbox (test/outbox/harness `SandboxHandle` fits). */
export interface SandboxControl {
  post<T = unknown>(path: string, body: unknown): Promise<T>;
}

/** The dispatcher's senders service, as far as creating a WhatsApp number goes. */
export interface SendersApi {
  create(input: { organization_id: string; channel: 'whatsapp'; phone_number_id: string; display_phone_number: string; business_account_id: string; access_token: string }): Promise<{ id: string }>;
}

/**
 * A connected WhatsApp number in the dispatcher: first made known to the sandbox's Graph with its
 * token (adding a sender proves the token owns the number), then created. Nothing else waits for
 * it; `aProvisionedNumber` also waits for the read models.
 * @returns the dispatcher's sender id
 */
export async function aWhatsAppNumber(d: { senders: SendersApi; sandbox: SandboxControl }, organizationId: string, phoneNumberId: string): Promise<string> {
  const accessToken = `token-${phoneNumberId}`;
  await d.sandbox.post('/sandbox/meta/numbers', { phone_number_id: phoneNumberId, access_token: accessToken, display_phone_number: '5511912345678' });
  const view = await d.senders.create({
    organization_id: organizationId,
    channel: 'whatsapp',
    phone_number_id: phoneNumberId,
    display_phone_number: '5511912345678',
    business_account_id: '100000000000001',
    access_token: accessToken,
  });
  return view.id;
}

/**
 * `aWhatsAppNumber`, then waits (up to 30 s) until followups' and messaging's read models have it
 * connected (the dispatcher announces it with `outbox.sender.connected`).
 * @returns the dispatcher's sender id
 */
export async function aProvisionedNumber(world: TestWorld, d: { senders: SendersApi; sandbox: SandboxControl }, organizationId: string, phoneNumberId: string): Promise<string> {
  const senderId = await aWhatsAppNumber(d, organizationId, phoneNumberId);
  const soon = (probe: () => Promise<boolean>) => eventually(probe, 30_000, 100);
  await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".senders WHERE sender_id = $1 AND status = 'connected'`, [senderId])).length === 1);
  await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('messaging')}".whatsapp_senders WHERE phone_number_id = $1`, [phoneNumberId])).length === 1);
  return senderId;
}

/**
 * A Nylas mailbox connected as an email sender: the grant made in the sandbox, the account created
 * in the dispatcher over RPC. Defaults: a new grant, `sales@ours.example`, a Google grant.
 * @returns the dispatcher's sender id and the grant id
 */
export async function aConnectedMailbox(rpc: RpcClient, sandbox: SandboxControl, organizationId: string, o: { grant?: string; address?: string; provider?: string; isDefault?: boolean } = {}): Promise<{ senderId: string; grant: string }> {
  const grant = o.grant ?? `grant-${randomUUID()}`;
  const address = o.address ?? 'sales@ours.example';
  const provider = o.provider ?? 'google';
  await sandbox.post('/sandbox/nylas/grants', { grant_id: grant, api_key: 'nylas-key', email: address, provider });
  const created = await rpc.call('outbox-dispatcher', OutboxAccountRpc.Create, {
    organization_id: organizationId,
    channel: 'email',
    account_id: grant,
    address,
    api_key: 'nylas-key',
    provider,
    ...(o.isDefault === undefined ? {} : { is_default: o.isDefault }),
  });
  return { senderId: created.id, grant };
}

/** Contact data: a prospect "Sarah Lee" with a new `@acme.example` address. */
export function aContact(organizationId: string, overrides: Partial<ContactCreateData> = {}): ContactCreateData {
  return { organization_id: organizationId, kind: 'prospect', name: 'Sarah Lee', email: `sarah.${randomUUID().slice(0, 8)}@acme.example`, ...overrides };
}

/** Creates `aContact(...)` in messaging over RPC. */
export function createContact(rpc: RpcClient, organizationId: string, overrides: Partial<ContactCreateData> = {}, timeoutMs?: number): Promise<ContactView> {
  return rpc.call('messaging', MessagingRpc.ContactCreate, aContact(organizationId, overrides), timeoutMs);
}

/** Campaign data: an email campaign of 3 touches, follow-ups 2–5 days apart. */
export function aCampaign(organizationId: string, overrides: Partial<CampaignCreateData> = {}): CampaignCreateData {
  return {
    organization_id: organizationId,
    name: `Campaign ${randomUUID().slice(0, 6)}`,
    goal: 'Book a demo of the ergonomic chair line',
    allowed_channels: ['email'],
    max_touches: 3,
    followup_min_days: 2,
    followup_max_days: 5,
    ...overrides,
  };
}

/** Creates `aCampaign(...)` in outreach over RPC. */
export function createCampaign(rpc: RpcClient, organizationId: string, overrides: Partial<CampaignCreateData> = {}, timeoutMs?: number): Promise<CampaignView> {
  return rpc.call('outreach', OutreachRpc.CampaignCreate, aCampaign(organizationId, overrides), timeoutMs);
}

/**
 * Enrolls a new contact (`aContact` with `contact` over it) in a campaign over RPC.
 * @returns the enrollment id and the contact
 */
export async function anEnrollment(rpc: RpcClient, organizationId: string, campaignId: string, contact: Partial<ContactCreateData> = {}, timeoutMs?: number): Promise<{ enrollmentId: string; person: ContactView }> {
  const person = await createContact(rpc, organizationId, contact, timeoutMs);
  const result = await rpc.call('outreach', OutreachRpc.EnrollBatch, { organization_id: organizationId, campaign_id: campaignId, people: [{ person_kind: person.kind, person_id: person.id }] }, timeoutMs);
  const first = result.results[0] as { enrollment_id: string };
  return { enrollmentId: first.enrollment_id, person };
}

/**
 * `messaging.message.received` data: a WhatsApp text "oi" from `+5592988887777`, a reply (not an
 * auto-reply, not an opt-out), with new ids.
 */
export function aMessageReceived(contactId: string, overrides: Partial<MessageReceivedData> = {}): MessageReceivedData {
  return {
    message_id: randomUUID(),
    conversation_id: randomUUID(),
    instance_id: randomUUID(),
    contact_id: contactId,
    channel: 'whatsapp',
    direction: 'inbound',
    external_id: 'wamid.x',
    text: 'oi',
    message_type: 'text',
    auto_reply: false,
    opt_out: false,
    from: '+5592988887777',
    ...overrides,
  };
}

/**
 * A contact that wrote `agoMs` before `now` (so its 24-hour window is open), through messaging's
 * event, known to followups' read model once this resolves.
 * @returns the contact id
 */
export async function aContactWhoWrote(world: TestWorld, organizationId: string, now: Date, agoMs = HOUR, overrides: Partial<MessageReceivedData> = {}): Promise<string> {
  const contactId = overrides.contact_id ?? randomUUID();
  await publishEvent(world, MessagingEvents.MessageReceived, organizationId, aMessageReceived(contactId, overrides), new Date(now.getTime() - agoMs));
  await eventually(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".contacts WHERE contact_id = $1`, [contactId])).length === 1);
  return contactId;
}

/**
 * The first draft the decision runner left for an enrollment (`proposed_actions` row in
 * `pending_approval`), waited for up to `timeoutMs` (the runner asks the model first).
 */
export async function aPendingDraft(world: TestWorld, enrollmentId: string, timeoutMs = 30_000): Promise<{ id: string } & Record<string, unknown>> {
  return eventually(async () => (await world.sql<{ id: string } & Record<string, unknown>>(`SELECT * FROM "${world.schema('outreach')}".proposed_actions WHERE enrollment_id = $1 AND status = 'pending_approval'`, [enrollmentId]))[0], timeoutMs);
}

/** Waits (up to 20 s each) until every service answers `platform.ping` over RPC: they are consuming. */
export async function untilServicesAnswer(rpc: RpcClient, services: readonly ServiceName[]): Promise<void> {
  for (const service of services) await eventually(() => rpc.call(service, PlatformRpc.Ping, {}, 2000), 20_000, 200);
}

/**
 * A Meta `messages` webhook body with one inbound text (fixtures/meta/webhook-message-text.json):
 * from `from` (wa_id) to the business number `phoneNumberId`, sent at `timestampSeconds` (Unix s).
 */
export function aMetaTextWebhook(m: { from: string; text: string; wamid: string; timestampSeconds: number; phoneNumberId: string; profileName?: string }) {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '100000000000001',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '5511912345678', phone_number_id: m.phoneNumberId },
              contacts: [{ profile: { name: m.profileName ?? 'Ana Example' }, wa_id: m.from }],
              messages: [{ from: m.from, id: m.wamid, timestamp: String(m.timestampSeconds), type: 'text', text: { body: m.text } }],
            },
          },
        ],
      },
    ],
  };
}
