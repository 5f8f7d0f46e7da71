import { randomUUID } from 'node:crypto';
import { type ContactRef, contactWrites, conversationMessages, type DemoContext, findWhatsappContact } from '../../scripts/demo/demo-context.js';
import { activeFlow } from '../../scripts/demo/followups-scenarios.js';
import { type Answer, GatewayClient, SandboxClient } from '../../scripts/demo/http-clients.js';
import { Platform, type Tenant } from '../e2e/platform.js';

/** Statuses after which a message or a follow-up send can no longer start a wire attempt. */
const SETTLED_MESSAGE = new Set(['sent', 'delivered', 'read', 'failed', 'cancelled']);
const OPEN_EFFECT = new Set(['queued', 'pending', 'awaiting_decision', 'approved', 'uncertain']);
const LIVE_FOLLOWUP = new Set(['active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual']);

/** Polls `probe` every `everyMs` (250 ms) until it answers something truthy; a throw counts as no answer yet; undefined after `timeoutMs`. */
export async function until<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 45_000, everyMs = 250): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch {
      // The next poll tells.
    }
    if (Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Runs `tasks` at most `limit` at a time; every task runs even when one fails; rejects with the first failure. */
export async function pool<T>(limit: number, tasks: Array<() => Promise<T>>): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  const errors: unknown[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        try {
          results[i] = await tasks[i]!();
        } catch (err) {
          errors.push(err);
        }
      }
    }),
  );
  if (errors.length) throw errors[0];
  return results;
}

/** Throws with the envelope when `answer` is not one of `statuses`. */
export function expectOk<T>(what: string, answer: Answer<T>, ...statuses: number[]): T {
  if (!statuses.includes(answer.status)) throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** One organization of the suite, with its clients and WhatsApp numbers. */
export class SafetyOrg {
  readonly flows: Record<string, string> = {};

  constructor(
    readonly tenant: Tenant,
    readonly gateway: GatewayClient,
    readonly sandbox: SandboxClient,
    /** Phone-number ids of its WhatsApp senders (the first is the default). */
    readonly numbers: string[],
  ) {}

  get id(): string {
    return this.tenant.organizationId;
  }

  ctx(phoneNumberId = this.numbers[0]!): DemoContext {
    return { gateway: this.gateway, sandbox: this.sandbox, organizationId: this.id, phoneNumberId, say: () => undefined, stepTimeoutMs: 45_000, runTag: 'safety' };
  }

  /** Connects the WhatsApp senders (the sandbox's Meta accepts any phone-number id). */
  async connectNumbers(): Promise<void> {
    for (const [i, phoneNumberId] of this.numbers.entries()) {
      // A sender proves its id at the provider: the sandbox's Meta must hold the number first.
      expectOk('sandbox meta number', await this.sandbox.request('POST', '/sandbox/meta/numbers', { phone_number_id: phoneNumberId, access_token: 'sandbox-access-token', display_phone_number: `55119000000${i}${phoneNumberId.slice(-2)}` }), 200, 201);
      expectOk(
        'POST /senders',
        await this.gateway.post('/senders', { channel: 'whatsapp', phone_number_id: phoneNumberId, display_phone_number: `55119000000${i}${phoneNumberId.slice(-2)}`, business_account_id: '100000000000001', access_token: 'sandbox-access-token', label: `Safety number ${i + 1}` }),
        201,
      );
    }
  }

  /** Connects a Nylas mailbox of the sandbox; answers its sender id. */
  async connectMailbox(grant: string, address: string): Promise<string> {
    expectOk('sandbox nylas grant', await this.sandbox.request('POST', '/sandbox/nylas/grants', { grant_id: grant, api_key: 'sandbox-nylas-api-key', email: address, provider: 'google' }), 200, 201);
    return expectOk('POST /senders/accounts', await this.gateway.post('/senders/accounts', { channel: 'email', account_id: grant, address, api_key: 'sandbox-nylas-api-key', provider: 'google', label: grant }), 200, 201).id;
  }

  /** An active flow made once per organization and `name`. */
  async flow(name: string, body: object): Promise<string> {
    this.flows[name] ??= await activeFlow(this.ctx(), { ...body, name: `${name} ${randomUUID().slice(0, 6)}` }, 'safety');
    return this.flows[name]!;
  }

  /** The contact writes in on `phoneNumberId` (a signed Meta webhook) and is stored. */
  async writes(waId: string, text: string, phoneNumberId: string, options: { alreadySent?: boolean } = {}): Promise<ContactRef> {
    if (!options.alreadySent) return contactWrites(this.ctx(phoneNumberId), waId, text, 'Safety Person');
    // The caller fired the webhook itself (to choose its wamid): wait until messaging stored it.
    const ctx = this.ctx(phoneNumberId);
    const ref = await until(() => findWhatsappContact(ctx, waId), 45_000);
    if (!ref) throw new Error(`contact +${waId} never showed up in messaging`);
    const stored = await until(async () => (await conversationMessages(ctx, ref.conversationId)).some((m) => m.direction === 'inbound' && (m.body ?? m.text) === text), 45_000);
    if (!stored) throw new Error(`message "${text}" of +${waId} never stored`);
    return ref;
  }

  async enrollFollowup(flowId: string, who: ContactRef, key: string): Promise<Answer> {
    return this.gateway.post('/ai/followups/enrollments', { customer_id: this.id, flow_id: flowId, contact_id: who.contactId, conversation_id: who.conversationId, operation_key: key });
  }

  async followup(enrollmentId: string): Promise<{ enrollment: Record<string, unknown> & { status: string; finished_at?: string | null; reason?: string | null }; effects: Array<Record<string, unknown> & { kind: string; status: string }> }> {
    return expectOk('GET follow-up enrollment', await this.gateway.get(`/ai/followups/enrollments/${enrollmentId}?customer_id=${this.id}`), 200).data;
  }

  messages(conversationId: string): Promise<Array<Record<string, unknown> & { message_id: string; direction: string; status: string }>> {
    return conversationMessages(this.ctx(), conversationId) as Promise<Array<Record<string, unknown> & { message_id: string; direction: string; status: string }>>;
  }

  /**
   * The barrier after a stop: waits until the follow-up enrollment is no longer live and holds no
   * open send, and every outbound message of the conversation carrying one of `texts` is settled
   * (sent, failed, cancelled: nothing queued can still start an attempt). Answers what is still
   * open when it gives up, or null when settled.
   */
  async settleFollowup(enrollmentId: string | null, conversationId: string, texts: string[], timeoutMs = 60_000): Promise<string | null> {
    let open = '';
    const done = await until(async () => {
      if (enrollmentId) {
        const view = await this.followup(enrollmentId);
        const pending = view.effects.filter((e) => e.kind === 'send' && OPEN_EFFECT.has(e.status));
        if (LIVE_FOLLOWUP.has(view.enrollment.status) || pending.length) {
          open = `enrollment ${enrollmentId} ${view.enrollment.status}, sends ${
            view.effects
              .filter((e) => e.kind === 'send')
              .map((e) => e.status)
              .join(',') || 'none'
          }`;
          return false;
        }
      }
      const queued = (await this.messages(conversationId)).filter((m) => m.direction === 'outbound' && texts.some((t) => String(m.body ?? '').includes(t)) && !SETTLED_MESSAGE.has(m.status));
      open = queued.length ? `messages ${queued.map((m) => `${m.id}:${m.status}`).join(',')}` : '';
      return queued.length === 0;
    }, timeoutMs);
    return done ? null : open || 'unknown';
  }

  /** Waits until a message the caller asked for is settled (or the request was refused). */
  async settleMessage(conversationId: string, messageId: string | undefined, timeoutMs = 45_000): Promise<string | null> {
    if (!messageId) return null;
    let status = '?';
    const done = await until(async () => {
      const m = (await this.messages(conversationId)).find((x) => x.id === messageId);
      status = m?.status ?? 'missing';
      return m ? SETTLED_MESSAGE.has(m.status) : false;
    }, timeoutMs);
    return done ? null : `message ${messageId} ${status}`;
  }

  /** Waits until every delivery of a notification left `pending` (and its message settled). */
  async settleNotification(notificationId: string | undefined, timeoutMs = 45_000): Promise<string | null> {
    if (!notificationId) return null;
    let open = '';
    const done = await until(async () => {
      const view = expectOk('GET notification', await this.gateway.get(`/notifications/${notificationId}`), 200);
      const pending = (view.deliveries as Array<Record<string, unknown>>).filter((d) => d.status === 'pending');
      open = pending.map((d) => `${d.channel}:${d.status}`).join(',');
      return pending.length === 0;
    }, timeoutMs);
    return done ? null : `notification ${notificationId} ${open}`;
  }

  async notification(notificationId: string): Promise<Record<string, unknown> & { deliveries: Array<Record<string, unknown> & { status: string }> }> {
    return expectOk('GET notification', await this.gateway.get(`/notifications/${notificationId}`), 200);
  }

  async contact(contactId: string): Promise<Record<string, unknown>> {
    return expectOk('GET contact', await this.gateway.get(`/contacts/${contactId}`), 200);
  }
}

/** Flow bodies of the suite: every window open, the sender of the contact's last conversation. */
export const OPEN_WINDOW = { send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' };

/** trigger → text → end: the enrollment's only (and last) send is queued at once. */
export function oneTextFlow(text: string, cancelOnReply = true): object {
  return {
    graph: {
      nodes: [
        { id: 'inicio', type: 'trigger', config: {} },
        { id: 'texto', type: 'action', config: { mode: 'text', body: text } },
        { id: 'fim', type: 'end', config: { outcome: 'exhausted' } },
      ],
      edges: [
        { id: 'e1', source: 'inicio', target: 'texto', condition: { type: 'always' } },
        { id: 'e2', source: 'texto', target: 'fim', condition: { type: 'always' } },
      ],
    },
    settings: { trigger: { kind: 'manual', cancel_on_reply: cancelOnReply }, handoff_policy: 'stop', sender: { mode: 'last_conversation' }, ...OPEN_WINDOW },
  };
}

/** trigger → wait 1 h → text → end (seed 002's wait → lembrete → fim). */
export function waitThenTextFlow(text: string): object {
  return {
    graph: {
      nodes: [
        { id: 'inicio', type: 'trigger', config: {} },
        { id: 'espera', type: 'wait', config: { mode: 'fixed', duration_ms: 3_600_000 } },
        { id: 'lembrete', type: 'action', config: { mode: 'text', body: text } },
        { id: 'fim', type: 'end', config: { outcome: 'exhausted' } },
      ],
      edges: [
        { id: 'e1', source: 'inicio', target: 'espera', condition: { type: 'always' } },
        { id: 'e2', source: 'espera', target: 'lembrete', condition: { type: 'always' } },
        { id: 'e3', source: 'lembrete', target: 'fim', condition: { type: 'always' } },
      ],
    },
    settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'stop', sender: { mode: 'last_conversation' }, ...OPEN_WINDOW },
  };
}

/** Waits until the sandbox's `provider` took a scripted fault matching `match` since `sinceMs`. */
export async function faultTaken(sandbox: SandboxClient, provider: string, match: Record<string, string>, sinceMs: number, timeoutMs = 45_000): Promise<boolean> {
  return Boolean(
    await until(async () => {
      const answer = await sandbox.request('GET', `/sandbox/control/${provider}/faults/taken?since_ms=${sinceMs}`);
      return (answer.body?.taken ?? []).some((t: { context: Record<string, string> }) => Object.entries(match).every(([k, v]) => t.context[k] === v));
    }, timeoutMs),
  );
}

/**
 * A whole platform of its own (`Platform.start(label)`) with one organization whose one WhatsApp
 * number (`numberPrefix` and the time, 15 digits) is connected: the set-up of the safety suite's
 * single-scenario files. Stop it with `platform.stop()`.
 */
export async function startSafetyOrg(label: string, name: string, numberPrefix: string): Promise<{ platform: Platform; sandbox: SandboxClient; w: SafetyOrg }> {
  const platform = await Platform.start(label);
  const sandbox = new SandboxClient(platform.url('sandbox'));
  const tenant = await platform.tenant(name);
  const w = new SafetyOrg(tenant, new GatewayClient(platform.url('gateway'), tenant.secret), sandbox, [`${numberPrefix}${Date.now()}`.slice(0, 15)]);
  await w.connectNumbers();
  return { platform, sandbox, w };
}
