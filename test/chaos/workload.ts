import { createHash } from 'node:crypto';
import { type Answer, GatewayClient, SandboxClient } from '../../scripts/demo/http-clients.js';
import type { ChaosTarget, LedgerEntry, Rng } from './types.js';
import { until as untilAnswer } from '../safety/safety-world.js';

/**
 * The chaos run's workload (issue 17 §2): on a schedule drawn up front from the run's seed
 * (`planWorkload`: each ask's offset, kind and follow-ons, whatever the machine's speed), it asks
 * the platform for sends the way its users do — follow-up enrollments, outreach drafts approved or
 * rejected, notifications, operator sends — while contacts write in, reply while a send waits,
 * opt out, and the provider reports statuses. Only the gateway's public REST API (the run's API
 * key) and the sandbox's routes are used; every send asked is one `LedgerEntry`, with the ids the
 * platform answered and the stop event the workload caused (`reconcile.ts` judges them).
 *
 * Faults are expected while it runs: an ask that meets a 5xx, a 503 or no answer is repeated with
 * the same idempotency key or operation key until the platform answers (`ASK_PATIENCE_MS`), so the
 * ledger holds exactly one entry per ask whatever the retries.
 */

/** How long one ask is repeated through 5xx answers and dropped connections before it is left unanswered, ms. */
export const ASK_PATIENCE_MS = 90_000;
/**
 * Most scenarios running at once: a planned ask whose offset comes while this many are still
 * running starts when one ends (late, never dropped), so a slow machine asks the same things later.
 */
export const WORKLOAD_CONCURRENCY = 12;
/** Gap between two planned asks, ms (the generator picks in this range): about 50 asks a minute. */
export const START_GAP_MS: [number, number] = [600, 1800];
/** The organization's daily prospect cap per mailbox during a run: the largest PUT /agentic/outreach/settings/prospect-cap takes (see `Workload.setup`). */
export const WORKLOAD_PROSPECT_CAP = 100_000;
/** How long a scenario waits for one asynchronous step (a contact stored, a draft in review), ms. */
const STEP_TIMEOUT_MS = 90_000;

/** Every follow-up text carries its ask's marker, so each wire call maps back to one ledger entry. */
export const marker = (ref: string) => `[${ref}]`;

/**
 * The flows the workload enrolls contacts in: `double` (two texts in a row, `cancel_on_reply`),
 * `single` (one text, replies do not cancel it) and `waiting` (a text, a 5-minute wait — the
 * shortest a flow allows — then a second text, `cancel_on_reply`; some are advanced at once).
 * `{{vars.ref}}` renders the ask's ref into every text.
 */
export const WORKLOAD_FLOWS = {
  double: { cancelOnReply: true, texts: ['Chaos first step', 'Chaos second step'], waitMs: 0 },
  single: { cancelOnReply: false, texts: ['Chaos only step'], waitMs: 0 },
  waiting: { cancelOnReply: true, texts: ['Chaos before the wait', 'Chaos after the wait'], waitMs: 5 * 60_000 },
} as const;
export type WorkloadFlow = keyof typeof WORKLOAD_FLOWS;

const OPEN_WINDOW = { send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' };

/** The body of `POST /ai/followup-flows` for one of the workload's flows. */
export function flowBody(name: WorkloadFlow, runTag: string): Record<string, unknown> {
  const f = WORKLOAD_FLOWS[name];
  const nodes: Array<Record<string, unknown>> = [{ id: 'inicio', type: 'trigger', config: {} }];
  const chain: string[] = ['inicio'];
  f.texts.forEach((text, i) => {
    if (i > 0 && f.waitMs) {
      nodes.push({ id: 'espera', type: 'wait', config: { mode: 'fixed', duration_ms: f.waitMs } });
      chain.push('espera');
    }
    nodes.push({ id: `texto${i + 1}`, type: 'action', config: { mode: 'text', body: `${text} {{vars.tag}}` } });
    chain.push(`texto${i + 1}`);
  });
  nodes.push({ id: 'fim', type: 'end', config: { outcome: 'exhausted' } });
  chain.push('fim');
  const edges = chain.slice(1).map((target, i) => ({ id: `e${i + 1}`, source: chain[i], target, condition: { type: 'always' } }));
  return {
    name: `Chaos ${name} ${runTag}`,
    graph: { nodes, edges },
    settings: { trigger: { kind: 'manual', cancel_on_reply: f.cancelOnReply }, handoff_policy: 'stop', sender: { mode: 'last_conversation' }, ...OPEN_WINDOW },
  };
}

/** Sends of a ledger entry's stop: what the reconciliation must find absent from the wire after `stop.at`. */
export type StopKind = 'reply' | 'opt_out' | 'reject';

/** What the workload set up before the scenarios: the platform-side ids the reconciliation reads too. */
export interface WorkloadSetup {
  phoneNumberId: string;
  senderId: string;
  /** Nylas grant of the default mailbox (notifications and operator email). */
  grant: string;
  /** Nylas grant of the campaign's mailbox (outreach only). */
  campaignGrant: string;
  campaignId: string;
  flows: Record<WorkloadFlow, string>;
}

type Log = (s: string) => void;

/** One ask and its retries through faults: the gateway (or the sandbox's webhook relay) until it answers below 500. */
async function ask(what: string, fn: () => Promise<Answer>, log: Log, patienceMs = ASK_PATIENCE_MS): Promise<Answer | undefined> {
  const deadline = Date.now() + patienceMs;
  let last: Answer | undefined;
  let pause = 300;
  for (;;) {
    try {
      last = await fn();
      if (last.status < 500 && last.status !== 429) return last;
    } catch (err) {
      last = undefined;
      if (Date.now() > deadline) log(`${what}: no answer (${(err as Error).message})`);
    }
    if (Date.now() > deadline) {
      log(`${what}: gave up after ${patienceMs} ms (last HTTP ${last?.status ?? 'none'})`);
      return last;
    }
    await sleep(pause);
    pause = Math.min(pause * 2, 3_000);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One ask of the run's schedule, drawn up front from the seed with everything that follows it
 * (issue 17: a failing seed replays the same run): its number `n` (which names its ref and its
 * contact), its offset from the start of the workload, and its follow-on actions — a reply, a STOP,
 * an approval or a rejection — keyed to the ask, never to clocks or to the platform's answers.
 * `delayMs` is how long after the platform answered the ask its follow-on waits.
 */
export type PlannedAsk = { n: number; atMs: number } & (
  | { kind: 'followup'; flow: WorkloadFlow; then: 'nothing' | 'reply' | 'stop' | 'advance'; delayMs: number }
  | { kind: 'notification'; channels: Array<'whatsapp' | 'email'>; stop: boolean; delayMs: number }
  | { kind: 'operator_send'; stop: boolean; delayMs: number }
  | { kind: 'outreach'; verdict: 'approve' | 'reject'; after: 'nothing' | 'reply' | 'opt_out' }
  /** A status webhook replayed for a message of the ask `of`, planned `STATUS_AFTER_MS` or more before (its WhatsApp contact), if one reached the wire by then. */
  | { kind: 'status'; status: 'sent' | 'delivered' | 'read'; of: number | null }
);

/** A status webhook names an ask planned at least this long before it (its message has had time to reach the wire), ms. */
const STATUS_AFTER_MS = 15_000;
/** Asks whose contact gets WhatsApp messages (a status webhook can name one of theirs). */
const WHATSAPP_KINDS = new Set<PlannedAsk['kind']>(['followup', 'notification', 'operator_send']);

/**
 * The workload's schedule for `durationMs`: asks at gaps of `START_GAP_MS`, each kind and its
 * follow-ons drawn from `rng` in a fixed order. Pure: the same seed gives the same schedule.
 */
export function planWorkload(rng: Rng, durationMs: number): PlannedAsk[] {
  const out: PlannedAsk[] = [];
  for (let at = 0, n = 1; at < durationMs; at += rng.int(START_GAP_MS[0], START_GAP_MS[1]), n++) {
    const r = rng.next();
    if (r < 0.35) {
      const flow = rng.pick(['double', 'double', 'single', 'waiting'] as const);
      const then = rng.pick(['nothing', 'nothing', 'reply', 'reply', 'stop', 'advance'] as const);
      out.push({ n, atMs: at, kind: 'followup', flow, then, delayMs: rng.int(0, 7_000) });
    } else if (r < 0.55) {
      const channels = rng.pick([['whatsapp'], ['email'], ['whatsapp', 'email']] as const);
      const stop = rng.chance(0.15);
      out.push({ n, atMs: at, kind: 'notification', channels: [...channels], stop, delayMs: rng.int(0, 3_000) });
    } else if (r < 0.7) {
      const stop = rng.chance(0.15);
      out.push({ n, atMs: at, kind: 'operator_send', stop, delayMs: rng.int(0, 3_000) });
    } else if (r < 0.9) {
      const verdict = rng.chance(0.75) ? 'approve' : 'reject';
      out.push({ n, atMs: at, kind: 'outreach', verdict, after: rng.pick(['nothing', 'nothing', 'reply', 'opt_out'] as const) });
    } else {
      const status = rng.pick(['delivered', 'read', 'sent'] as const);
      const earlier = out.filter((a) => WHATSAPP_KINDS.has(a.kind) && a.atMs <= at - STATUS_AFTER_MS);
      const pick = rng.next();
      out.push({ n, atMs: at, kind: 'status', status, of: earlier.length ? earlier[Math.floor(pick * earlier.length)]!.n : null });
    }
  }
  return out;
}

/**
 * The fingerprint of a run's schedules, printed in its report so a replay can be compared: a
 * SHA-256 (first 16 hex digits) of the asks and the faults as JSON, and their counts by kind.
 */
export function scheduleFingerprint(asks: readonly PlannedAsk[], faults: readonly object[]): { hash: string; asks: Record<string, number>; faults: Record<string, number> } {
  const count = (items: readonly { kind: string }[]) => items.reduce<Record<string, number>>((acc, x) => ({ ...acc, [x.kind]: (acc[x.kind] ?? 0) + 1 }), {});
  const hash = createHash('sha256').update(JSON.stringify({ asks, faults })).digest('hex').slice(0, 16);
  return { hash, asks: count(asks), faults: count(faults as Array<{ kind: string }>) };
}

/** The safety suite's poll, every 400 ms by default here: the platform is under faults, so a throw is no answer yet. */
const until = <T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = STEP_TIMEOUT_MS, everyMs = 400) => untilAnswer(probe, timeoutMs, everyMs);

const ok = (a: Answer | undefined, ...statuses: number[]) => a !== undefined && statuses.includes(a.status);
const describe = (a: Answer | undefined) => (a ? `HTTP ${a.status} ${a.body?.error?.code ?? ''}`.trim() : 'no answer');

/** A contact known to the platform through a WhatsApp message it wrote. */
interface WhatsappContact {
  waId: string;
  contactId: string;
  conversationId: string;
}

/**
 * Drives one run: the schedule (`plan`, or `planWorkload(rng, durationMs)`), each ask started at
 * its offset (later when `WORKLOAD_CONCURRENCY` asks are still running), and waits for every ask
 * and its follow-ons to finish.
 * @returns one entry per send asked (ids empty when the platform never answered the ask)
 */
export async function runWorkload(target: ChaosTarget, opts: { durationMs: number; rng: Rng; plan?: PlannedAsk[]; log?: (s: string) => void }): Promise<LedgerEntry[]> {
  const w = new Workload(target, opts.log ?? (() => undefined));
  await w.setup();
  await w.run(opts.plan ?? planWorkload(opts.rng, opts.durationMs));
  return w.ledger;
}

/** The workload's state: its clients, set-up and ledger. Exported for the reconciliation's tests. */
export class Workload {
  readonly ledger: LedgerEntry[] = [];
  readonly gateway: GatewayClient;
  readonly sandbox: SandboxClient;
  setupIds!: WorkloadSetup;
  /** wamids the sandbox's Meta accepted (read from its log), for the status webhooks the workload replays. */
  private readonly wamids: Array<{ waId: string; wamid: string }> = [];
  private metaSeq = 0;
  private readonly runTag: string;

  constructor(
    readonly target: ChaosTarget,
    private readonly log: Log,
  ) {
    this.gateway = new GatewayClient(target.gatewayUrl, target.apiKey);
    this.sandbox = new SandboxClient(target.sandboxUrl);
    this.runTag = `s${target.seed}`;
  }

  private get org(): string {
    return this.target.organizationId;
  }

  /** A WhatsApp number of this run's scenario `n`: distinct per scenario, so pacing (per pair) rarely serialises two asks. */
  private waId(n: number): string {
    return `55219${String(this.target.seed % 1000).padStart(3, '0')}${String(n).padStart(5, '0')}`;
  }

  /** The WhatsApp number, two mailboxes, three flows and an email campaign; every step retried through faults. */
  async setup(): Promise<WorkloadSetup> {
    const phoneNumberId = `7${String(this.target.seed).padStart(14, '0').slice(-14)}`;
    const must = async (what: string, fn: () => Promise<Answer>, ...statuses: number[]) => {
      const a = await ask(what, fn, this.log);
      if (!ok(a, ...statuses)) throw new Error(`chaos set-up: ${what}: ${describe(a)} ${JSON.stringify(a?.body ?? null).slice(0, 300)}`);
      return a!.body;
    };
    await must('sandbox meta settings', () => this.sandbox.request('POST', '/sandbox/meta/settings', { statuses: ['sent', 'delivered', 'read'], status_delay_ms: 300 }), 200);
    await must('sandbox meta number', () => this.sandbox.request('POST', '/sandbox/meta/numbers', { phone_number_id: phoneNumberId, access_token: 'sandbox-access-token', display_phone_number: '5511955550000' }), 200, 201);
    const senders = await must('GET /senders', () => this.gateway.get('/senders?channel=whatsapp'), 200);
    let senderId: string | undefined = (senders.items as Array<{ id: string; phone_number_id: string }>).find((s) => s.phone_number_id === phoneNumberId)?.id;
    senderId ??= (
      await must('POST /senders', () => this.gateway.post('/senders', { channel: 'whatsapp', phone_number_id: phoneNumberId, display_phone_number: '5511955550000', business_account_id: '100000000000001', access_token: 'sandbox-access-token', label: 'Chaos number' }), 201, 409)
    ).id as string;
    const grant = `chaos-default-${this.runTag}`;
    const campaignGrant = `chaos-campaign-${this.runTag}`;
    const mailbox = async (g: string, address: string): Promise<string> => {
      await must('sandbox nylas grant', () => this.sandbox.request('POST', '/sandbox/nylas/grants', { grant_id: g, api_key: 'sandbox-nylas-api-key', email: address, provider: 'google' }), 200, 201);
      const listed = await must('GET /senders?channel=email', () => this.gateway.get('/senders?channel=email'), 200);
      const found = (listed.items as Array<{ id: string; account_id?: string; address?: string }>).find((s) => s.account_id === g || s.address === address);
      if (found) return found.id;
      return (await must('POST /senders/accounts', () => this.gateway.post('/senders/accounts', { channel: 'email', account_id: g, address, api_key: 'sandbox-nylas-api-key', provider: 'google', label: g }), 200, 201)).id;
    };
    await mailbox(grant, `hello@${this.runTag}.chaos.example`);
    const campaignMailbox = await mailbox(campaignGrant, `sales@${this.runTag}.chaos.example`);
    const flows = {} as Record<WorkloadFlow, string>;
    for (const name of Object.keys(WORKLOAD_FLOWS) as WorkloadFlow[]) {
      const body = flowBody(name, this.runTag);
      const created = (await must(`create flow ${name}`, () => this.gateway.post('/ai/followup-flows', { ...body, customer_id: this.org }), 201)).data;
      const published = (await must(`publish flow ${name}`, () => this.gateway.post(`/ai/followup-flows/${created.id}/publish`, { customer_id: this.org, expected_revision: created.revision }), 200, 409)).data;
      const revision = published?.revision ?? (await must('GET flow', () => this.gateway.get(`/ai/followup-flows/${created.id}?customer_id=${this.org}`), 200)).data.revision;
      await must(`activate flow ${name}`, () => this.gateway.patch(`/ai/followup-flows/${created.id}`, { customer_id: this.org, expected_revision: revision, status: 'active' }), 200, 409);
      flows[name] = created.id;
    }
    // The daily prospect cap (seed 003 §6: 30 prospect emails per mailbox and UTC day) would hold
    // every outreach send after the campaign mailbox's 30th until 00:00 UTC: a 10-minute run asks
    // about 65 of them (the 10-minute run of seed 1015656272 ended with 34 approved actions held and
    // judged stuck). The run is about faults, not the cap (test/outreach/outreach-to-nylas holds a
    // send on it): the organization's cap goes to the largest the API takes.
    await must('PUT /agentic/outreach/settings/prospect-cap', () => this.gateway.put('/agentic/outreach/settings/prospect-cap', { prospect_emails_per_day: WORKLOAD_PROSPECT_CAP }), 200);
    const campaign = await must(
      'POST /agentic/outreach/campaigns',
      () => this.gateway.post('/agentic/outreach/campaigns', { name: `Chaos campaign ${this.runTag}`, goal: 'Book a 20-minute call', allowed_channels: ['email'], max_touches: 3, followup_min_days: 2, followup_max_days: 5, email_sender_id: campaignMailbox }),
      200,
      201,
    );
    this.setupIds = { phoneNumberId, senderId, grant, campaignGrant, campaignId: campaign.id, flows };
    this.log(`chaos workload: set up number ${phoneNumberId}, mailboxes ${grant} and ${campaignGrant}, flows ${Object.values(flows).join(', ')}, campaign ${campaign.id}`);
    return this.setupIds;
  }

  /** Runs the schedule: each ask at its offset, at most `WORKLOAD_CONCURRENCY` at once, and waits for all of them. */
  async run(plan: readonly PlannedAsk[]): Promise<void> {
    const running = new Set<Promise<void>>();
    const started = Date.now();
    let late = 0;
    for (const planned of plan) {
      const wait = started + planned.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      while (running.size >= WORKLOAD_CONCURRENCY) await Promise.race(running);
      if (Date.now() - started - planned.atMs > 5_000) late++;
      const p = this.perform(planned)
        .catch((err: Error) => this.log(`chaos workload: ask ${planned.n} (${planned.kind}) failed: ${err.message}`))
        .finally(() => running.delete(p));
      running.add(p);
    }
    await Promise.all(running);
    const minutes = (Date.now() - started) / 60_000;
    this.log(`chaos workload: ${plan.length} asks planned, ${this.ledger.length} asks made in ${minutes.toFixed(1)} min (${late} asks started more than 5 s late)`);
  }

  /** One planned ask and its follow-ons. */
  private perform(a: PlannedAsk): Promise<void> {
    switch (a.kind) {
      case 'followup':
        return this.followup(a.n, a.flow, a.then, a.delayMs);
      case 'notification':
        return this.notification(a.n, a.channels, a.stop, a.delayMs);
      case 'operator_send':
        return this.operatorSend(a.n, a.stop, a.delayMs);
      case 'outreach':
        return this.outreach(a.n, a.verdict, a.after);
      case 'status':
        return this.statusWebhook(a.status, a.of);
    }
  }

  private entry(e: Omit<LedgerEntry, 'askedAt' | 'ids'> & { ids?: Record<string, string> }): LedgerEntry {
    const full: LedgerEntry = { ...e, ids: e.ids ?? {}, askedAt: Date.now() };
    this.ledger.push(full);
    return full;
  }

  /**
   * The contact writes `text` on WhatsApp (a signed Meta webhook through the sandbox, repeated with
   * the same wamid until the gateway answers 200): answers the epoch ms of that 200.
   */
  private async writes(waId: string, text: string, name: string, wamid: string): Promise<number | undefined> {
    const a = await ask(
      `inbound from +${waId}`,
      async () => {
        const answer = await this.sandbox.request('POST', '/sandbox/meta/inbound', { from: waId, text, name, phone_number_id: this.setupIds.phoneNumberId, message_id: wamid });
        // The sandbox relays the gateway's answer: below 500 but not 200 is a refusal, 5xx or none a fault.
        return answer.status === 200 ? { status: answer.body?.status || 502, body: answer.body } : answer;
      },
      this.log,
    );
    return ok(a, 200) ? Date.now() : undefined;
  }

  /** A new contact that wrote in on WhatsApp, with its ids once messaging stored it. */
  private async whatsappContact(n: number, ref: string, email?: string): Promise<WhatsappContact | undefined> {
    const waId = this.waId(n);
    if (!(await this.writes(waId, `Hello from ${ref}`, `Chaos ${ref}`, `wamid.chaos${this.runTag}n${n}first`))) return undefined;
    const contactId = await until(async () => {
      const a = await this.gateway.post('/contacts', { phone: `+${waId}` });
      if (a.status === 409) return a.body?.error?.details?.contact_id as string | undefined;
      // Created here: the inbound was not stored yet; it joins this contact when it is.
      if (a.status === 201 || a.status === 200) return a.body.id as string;
      return undefined;
    });
    if (!contactId) return undefined;
    const conversationId = await until(async () => {
      const a = await this.gateway.get(`/conversations?contact_id=${contactId}&channel=whatsapp`);
      return a.status === 200 ? (a.body.items?.[0]?.id as string | undefined) : undefined;
    });
    if (!conversationId) return undefined;
    if (email) await ask('PATCH contact', () => this.gateway.patch(`/contacts/${contactId}`, { email }), this.log);
    return { waId, contactId, conversationId };
  }

  /** A follow-up enrollment; then maybe a reply while a step waits, a STOP, or the wait run now. */
  private async followup(n: number, flow: WorkloadFlow, then: 'nothing' | 'reply' | 'stop' | 'advance', delayMs: number): Promise<void> {
    const ref = `fu${n}`;
    const who = await this.whatsappContact(n, ref);
    if (!who) return this.log(`${ref}: the contact never showed up`);
    const e = this.entry({ ref, kind: 'followup', channel: 'whatsapp', to: who.waId, ids: { contact_id: who.contactId, conversation_id: who.conversationId, flow: flow, flow_id: this.setupIds.flows[flow] } });
    const a = await ask(
      `${ref}: enroll`,
      () => this.gateway.post('/ai/followups/enrollments', { customer_id: this.org, flow_id: this.setupIds.flows[flow], contact_id: who.contactId, conversation_id: who.conversationId, operation_key: `chaos:${this.runTag}:${ref}`, variables: { tag: marker(ref) } }),
      this.log,
    );
    if (ok(a, 200, 201)) e.ids.enrollment_id = a!.body.data.id;
    else e.ids.refused = describe(a);
    if (!e.ids.enrollment_id || then === 'nothing') return;
    await sleep(delayMs);
    if (then === 'advance') {
      await until(
        async () => {
          const view = await this.gateway.get(`/ai/followups/enrollments/${e.ids.enrollment_id}?customer_id=${this.org}`);
          if (view.status !== 200) return false;
          const enrollment = view.body.data.enrollment;
          if (!['active', 'waiting_reply'].includes(enrollment.status) || !enrollment.next_run_at || Date.parse(enrollment.next_run_at) < Date.now() + 60_000) return !['active', 'waiting_reply'].includes(enrollment.status);
          const c = await this.gateway.post(`/ai/followups/enrollments/${e.ids.enrollment_id}/control`, { customer_id: this.org, expected_revision: enrollment.revision, action: 'advance_now' });
          return c.status === 200;
        },
        60_000,
        1_000,
      );
      return;
    }
    const text = then === 'stop' ? 'STOP' : `Thanks, I will look at it (${ref})`;
    const at = await this.writes(who.waId, text, `Chaos ${ref}`, `wamid.chaos${this.runTag}n${n}${then}`);
    if (at && (then === 'stop' || WORKLOAD_FLOWS[flow].cancelOnReply)) e.stop = { kind: then === 'stop' ? 'opt_out' : 'reply', at };
  }

  /** A notification on one or two channels, each delivery one ledger entry; maybe a STOP right after. */
  private async notification(n: number, channels: Array<'whatsapp' | 'email'>, stop: boolean, delayMs: number): Promise<void> {
    const ref = `nt${n}`;
    const email = `${ref}.${this.runTag}@chaos.example`;
    const who = await this.whatsappContact(n, ref, email);
    if (!who) return this.log(`${ref}: the contact never showed up`);
    const entries = channels.map((channel) => this.entry({ ref: `${ref}:${channel}`, kind: 'notification', channel, to: channel === 'email' ? email : who.waId, ids: { contact_id: who.contactId } }));
    const a = await ask(`${ref}: notification`, () => this.gateway.post('/notifications', { contact_id: who.contactId, title: 'Chaos', body: `Chaos notification ${marker(ref)}`, channels, idempotency_key: `chaos:${this.runTag}:${ref}` }), this.log);
    for (const e of entries) {
      if (ok(a, 200, 201)) e.ids.notification_id = a!.body.id;
      else e.ids.refused = describe(a);
    }
    if (!stop || !ok(a, 200, 201)) return;
    await sleep(delayMs);
    const at = await this.writes(who.waId, 'STOP', `Chaos ${ref}`, `wamid.chaos${this.runTag}n${n}stop`);
    if (at) for (const e of entries) e.stop = { kind: 'opt_out', at };
  }

  /** An operator's WhatsApp message in the contact's conversation; maybe a STOP right after. */
  private async operatorSend(n: number, stop: boolean, delayMs: number): Promise<void> {
    const ref = `op${n}`;
    const who = await this.whatsappContact(n, ref);
    if (!who) return this.log(`${ref}: the contact never showed up`);
    const e = this.entry({ ref, kind: 'operator_send', channel: 'whatsapp', to: who.waId, ids: { contact_id: who.contactId, conversation_id: who.conversationId } });
    const a = await ask(`${ref}: operator send`, () => this.gateway.post(`/conversations/${who.conversationId}/messages`, { idempotency_key: `chaos:${this.runTag}:${ref}`, text: `Chaos operator message ${marker(ref)}` }), this.log);
    if (ok(a, 200, 201, 202)) e.ids.message_id = a!.body.message_id;
    else e.ids.refused = describe(a);
    if (!stop || !e.ids.message_id) return;
    await sleep(delayMs);
    const at = await this.writes(who.waId, 'STOP', `Chaos ${ref}`, `wamid.chaos${this.runTag}n${n}stop`);
    if (at) e.stop = { kind: 'opt_out', at };
  }

  /** A CRM person enrolled in the email campaign; the draft approved or rejected; maybe a reply or an opt-out after the send. */
  private async outreach(n: number, verdict: 'approve' | 'reject', after: 'nothing' | 'reply' | 'opt_out'): Promise<void> {
    const ref = `or${n}`;
    const email = `${ref}.${this.runTag}@prospect.chaos.example`;
    const created = await ask(`${ref}: contact`, () => this.gateway.post('/contacts', { kind: 'crm', name: `Chaos ${ref}`, email }), this.log);
    const contactId: string | undefined = created?.status === 409 ? created.body?.error?.details?.contact_id : ok(created, 200, 201) ? created!.body.id : undefined;
    if (!contactId) return this.log(`${ref}: contact not created (${describe(created)})`);
    const e = this.entry({ ref, kind: 'outreach', channel: 'email', to: email, ids: { contact_id: contactId } });
    const enrolled = await ask(`${ref}: enroll`, () => this.gateway.post(`/agentic/outreach/campaigns/${this.setupIds.campaignId}/enrollments`, { person_kind: 'crm', person_id: contactId }), this.log);
    if (ok(enrolled, 200, 201)) e.ids.enrollment_id = enrolled!.body.id;
    else if (enrolled?.status === 409 && enrolled.body?.error?.details?.enrollment_id) e.ids.enrollment_id = enrolled.body.error.details.enrollment_id;
    else {
      e.ids.refused = describe(enrolled);
      return;
    }
    const card = await until(
      async () => {
        const q = await this.gateway.get('/agentic/outreach/actions?limit=200');
        return q.status === 200 ? (q.body.items as Array<{ id: string; enrollment_id: string }>).find((c) => c.enrollment_id === e.ids.enrollment_id) : undefined;
      },
      STEP_TIMEOUT_MS * 2,
      1_000,
    );
    if (!card) return this.log(`${ref}: no draft reached the review queue`);
    e.ids.action_id = card.id;
    if (verdict === 'reject') {
      const r = await ask(`${ref}: reject`, () => this.gateway.post(`/agentic/outreach/actions/${card.id}/reject`, { reason: 'chaos: rejected by the workload' }), this.log);
      if (ok(r, 200)) e.stop = { kind: 'reject', at: Date.now() };
      else e.ids.reject_answer = describe(r);
      return;
    }
    const approved = await ask(`${ref}: approve`, () => this.gateway.post(`/agentic/outreach/actions/${card.id}/approve`, {}), this.log);
    if (!ok(approved, 200)) {
      e.ids.approve_answer = describe(approved);
      return;
    }
    if (after === 'nothing') return;
    const sent = await until(
      async () => {
        const calls = await this.sandbox.received('nylas');
        return calls.find((c) => c.context.grant_id === this.setupIds.campaignGrant && c.context.to === email && c.provider_id);
      },
      STEP_TIMEOUT_MS,
      1_500,
    );
    if (!sent) return;
    const body = after === 'opt_out' ? 'Please unsubscribe me from this.' : `Thanks! What would it cost? (${ref})`;
    const a = await ask(
      `${ref}: email reply`,
      async () => {
        const answer = await this.sandbox.request('POST', '/sandbox/nylas/inbound', { grant_id: this.setupIds.campaignGrant, from: email, from_name: `Chaos ${ref}`, body, reply_to_message_id: sent.provider_id });
        const status = (answer.body?.deliveries?.[0]?.status as number | undefined) ?? answer.status;
        return { status: status === 0 ? 502 : status, body: answer.body };
      },
      this.log,
    );
    if (after === 'opt_out' && a && a.status < 300) e.stop = { kind: 'opt_out', at: Date.now() };
  }

  /** The provider repeats or reorders a status of a message it accepted for the ask `of` (a signed status webhook through the sandbox). */
  private async statusWebhook(status: 'sent' | 'delivered' | 'read', of: number | null): Promise<void> {
    if (of === null) return;
    const log = await this.sandbox.request('GET', `/sandbox/control/meta/received?since_seq=${this.metaSeq}`);
    for (const c of (log.body?.calls ?? []) as Array<{ seq: number; operation: string; context: Record<string, string>; provider_id?: string }>) {
      this.metaSeq = Math.max(this.metaSeq, c.seq);
      if (c.operation === 'messages' && c.context.type !== 'read' && c.provider_id) this.wamids.push({ waId: c.context.wa_id ?? '', wamid: c.provider_id });
    }
    const wamid = this.wamids.find((m) => m.waId === this.waId(of))?.wamid;
    if (!wamid) return this.log(`status ${status} of ask ${of}: no message of it reached the wire yet`);
    await ask(`status ${status} of ${wamid}`, () => this.sandbox.request('POST', '/sandbox/meta/status', { wamid, status, phone_number_id: this.setupIds.phoneNumberId }), this.log, 20_000);
  }
}
