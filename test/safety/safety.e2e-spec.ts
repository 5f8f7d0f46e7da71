import { randomUUID } from 'node:crypto';
import { GatewayClient, SandboxClient } from '../../scripts/demo/http-clients.js';
import { Platform } from '../e2e/platform.js';
import { type Address, Ledger, wireLog } from './ledger.js';
import { expectOk, faultTaken, oneTextFlow, pool, SafetyOrg, until, waitThenTextFlow } from './safety-world.js';
import { AUTO_REPLIES, HUMAN_REPLIES, LONG_EMOJI_REPLIES, OPT_OUT_PHRASES, STOP_TIMINGS, type StopTiming, Variants, WHATSAPP_STOPS, type WhatsappStop } from './variants.js';

/**
 * The safety suite: the promises that span services, proven at the wire. The platform runs as
 * `npm start` runs it; the suite uses only the gateway's REST API, the providers' signed webhooks
 * (fired by the sandbox) and the sandbox's control API, and judges by what reached the sandbox.
 * Scenarios come from a seeded generator (`SAFETY_SEED`); each records its stop events, suppressions
 * and approvals in a ledger, then waits on a barrier (the REST view says every send that could
 * still leave has settled) instead of sleeping. The last test scans the sandbox's log against the
 * ledger, prints one row per invariant and expects no violation.
 */

const SEED = Number(process.env.SAFETY_SEED ?? 20261201);
const FOLLOWUP_TEXT = 'Safety follow-up: did you see our proposal?';
const LATER_TEXT = 'Safety reminder after the wait';
/**
 * The send lane's windows, widened for a loaded 2-core machine so a stop lands well inside them:
 * the pair pacing interval (seed 004: 6.5 s), a provider call held longer than it but inside the
 * send deadline, and the first retry delay (10 s default).
 */
const PAIR_INTERVAL_MS = 15_000;
const SEND_TIMEOUT_MS = 30_000;
const SLOW_PROVIDER_HOLD_MS = 25_000;
const BACKOFF_BASE_MS = 10_000;
/** A stop must land at least this long before the lane could pick the text up to count as "while it waits". */
const STOP_MARGIN_MS = 3_000;

/** A draft in the review queue (`GET /agentic/outreach/actions`), the fields this file reads. */
type ReviewCard = { id: string; enrollment_id: string; to: string; draft?: { subject?: string; body?: string } };
/** An item of an outreach enrollment's timeline, the fields this file reads. */
type TimelineItem = { kind: string; data?: { trigger_reason?: string; status?: string; direction?: string } };

describe('Safety: the reply, the opt-out and the approval win across services', () => {
  const v = new Variants(SEED);
  const ledger = new Ledger();
  const usedNumbers = new Set<string>();
  let platform: Platform;
  let sandbox: SandboxClient;

  /** A WhatsApp number nobody in this run used yet (a contact's caps and penalties outlive a scenario). */
  const freshWaId = () => {
    for (;;) {
      const n = `55119${v.digits(8)}`;
      if (!usedNumbers.has(n)) {
        usedNumbers.add(n);
        return n;
      }
    }
  };

  async function org(name: string, numbers: number): Promise<SafetyOrg> {
    const tenant = await platform.tenant(name);
    const phoneIds = Array.from({ length: numbers }, () => `9${v.digits(14)}`);
    const o = new SafetyOrg(tenant, new GatewayClient(platform.url('gateway'), tenant.secret), sandbox, phoneIds);
    await o.connectNumbers();
    return o;
  }

  beforeAll(async () => {
    platform = await Platform.start('safety', { WHATSAPP_PAIR_MIN_SEND_INTERVAL_MS: String(PAIR_INTERVAL_MS), WHATSAPP_SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS), OUTBOX_BACKOFF_BASE_MS: String(BACKOFF_BASE_MS) });
    sandbox = new SandboxClient(platform.url('sandbox'));
    expectOk('sandbox meta settings', await sandbox.request('POST', '/sandbox/meta/settings', { statuses: ['sent', 'delivered'], status_delay_ms: 100 }), 200);
  }, 240_000);
  afterAll(async () => {
    await platform?.stop();
  }, 120_000);

  describe('WhatsApp follow-ups: every stop, at every point of the send lane, on two numbers', () => {
    let w: SafetyOrg;

    /** stop × timing, the phrasing and number picked by the generator; opt-outs also before anything is queued. */
    const scenarios: Array<{ stop: WhatsappStop; timing: StopTiming }> = [];
    for (const stop of WHATSAPP_STOPS) for (const timing of STOP_TIMINGS) if (timing !== 'before_queued' || stop === 'opt_out' || stop === 'erased') scenarios.push({ stop, timing });

    beforeAll(async () => {
      w = await org('Safety WhatsApp', 2);
      await w.flow('one-text', oneTextFlow(FOLLOWUP_TEXT));
      await w.flow('wait-then-text', waitThenTextFlow(LATER_TEXT));
    }, 120_000);

    it(`runs ${scenarios.length} stop scenarios and records them`, async () => {
      await pool(
        6,
        scenarios.map((s) => () => whatsappStop(w, s.stop, s.timing)),
      );
    }, 600_000);
  });

  /**
   * One WhatsApp stop scenario: a contact writes in on one of the numbers, is enrolled in a
   * `cancel_on_reply` flow, and the stop lands at `timing`; then, for an opt-out, every other caller
   * tries to reach the person (an operator, a WhatsApp and an email notification, a new follow-up).
   */
  async function whatsappStop(w: SafetyOrg, stop: WhatsappStop, timing: StopTiming): Promise<void> {
    const waId = freshWaId();
    const number = v.pick(w.numbers);
    const scenario = `whatsapp ${stop} ${timing} (+${waId} on ${number})`;
    const email = `p${waId}@safety.example`;
    const since = Date.now();
    if (timing === 'retry_backoff') await sandbox.request('POST', '/sandbox/control/meta/faults', { kind: 'error', code: 131000, match: { wa_id: waId, type: 'text' } });
    if (timing === 'in_flight') await sandbox.request('POST', '/sandbox/control/meta/faults', { kind: 'latency', latency_ms: 4000, match: { wa_id: waId, type: 'text' } });
    // The contact's first message, with the wamid its read receipt will name (the slow provider holds that receipt).
    const firstText = v.pick(['Oi, tudo bem?', 'Hello, I saw your ad', 'Hola, ¿me cuentan más?']);
    const wamid = `wamid.safety${waId}${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    if (timing === 'slow_provider') await sandbox.request('POST', '/sandbox/control/meta/faults', { kind: 'latency', latency_ms: SLOW_PROVIDER_HOLD_MS, match: { type: 'read', message_id: wamid } });
    const delivered = expectOk('sandbox inbound', await sandbox.request('POST', '/sandbox/meta/inbound', { from: waId, text: firstText, name: 'Safety Person', phone_number_id: number, message_id: wamid }), 200);
    if (delivered.status !== 200) throw new Error(`${scenario}: the gateway answered the first message with ${delivered.status}`);
    const who = await w.writes(waId, firstText, number, { alreadySent: true });
    receipts.set(waId, wamid);
    // An email address too, so the opt-out's reach over every channel can be checked.
    expectOk('PATCH contact', await w.gateway.patch(`/contacts/${who.contactId}`, { email }), 200);
    const addresses: Address[] = [
      { channel: 'whatsapp', value: waId },
      { channel: 'email', value: email },
    ];
    const flowId = timing === 'future_wait' ? w.flows['wait-then-text']! : w.flows['one-text']!;
    const texts = [FOLLOWUP_TEXT, LATER_TEXT];

    let enrollmentId: string | null = null;
    const enroll = async () => {
      const answer = await w.enrollFollowup(flowId, who, `safety:${waId}:${randomUUID()}`);
      enrollmentId = answer.status < 300 ? answer.body.data.id : null;
      return answer;
    };
    if (timing !== 'before_queued') {
      expectOk('enroll', await enroll(), 200, 201);
      if (timing === 'future_wait') await until(async () => (await w.followup(enrollmentId!)).enrollment.next_run_at);
      else if (timing === 'retry_backoff') {
        if (!(await faultTaken(sandbox, 'meta', { wa_id: waId, type: 'text' }, since))) throw new Error(`${scenario}: the first attempt never reached the sandbox`);
      } else if (timing === 'in_flight') {
        if (!(await faultTaken(sandbox, 'meta', { wa_id: waId, type: 'text' }, since))) throw new Error(`${scenario}: the held attempt never reached the sandbox`);
      } else {
        await until(async () => (await w.followup(enrollmentId!)).effects.some((e) => e.kind === 'send'));
        // The text is held only once the contact's read receipt is on the wire (pacing) or held there (slow provider).
        await until(async () => (await receiptArrival(waId, Date.now())) !== undefined, 30_000);
      }
    }

    const ackedAt = await stopNow(w, stop, who, waId, number);
    const earliest = await earliestPickup(waId, timing, ackedAt);
    const late = earliest !== null && ackedAt > earliest - STOP_MARGIN_MS;
    if (late) ledger.missed.push(`${scenario}: stop ${ackedAt - earliest!} ms after the lane could take the text`);
    else {
      ledger.stop({ scenario, kind: stop, ackedAt, addresses, texts, lanePickup: earliest, ...(timing === 'pacing' || timing === 'slow_provider' ? { heldOn: number } : {}) });
      if (stop === 'opt_out') ledger.suppress({ scenario, cause: 'WhatsApp opt-out phrase', ackedAt, addresses });
    }

    if (timing === 'before_queued') {
      // "Before the send is queued": the stop is in the API's view (it is processed after the ACK) before the enrollment.
      await until(async () => {
        const c = await w.contact(who.contactId).catch(() => undefined);
        return !c || c.opted_out_at || c.erased;
      }, 30_000);
      const answer = await enroll();
      if (answer.status >= 500) throw new Error(`${scenario}: enrolling after the stop answered ${answer.status}`);
    }
    if (timing === 'future_wait' && enrollmentId) {
      // The wait would release the text now; once the stop is in the API's view it must be refused
      // (or find nothing to send). A stop that never takes effect gets the advance anyway.
      await until(async () => !['active', 'waiting_reply', 'dormente'].includes((await w.followup(enrollmentId!)).enrollment.status), 20_000);
      const current = (await w.followup(enrollmentId)).enrollment;
      await w.gateway.post(`/ai/followups/enrollments/${enrollmentId}/control`, { customer_id: w.id, expected_revision: current.revision, action: 'advance_now' });
    }
    const open = await w.settleFollowup(enrollmentId, who.conversationId, texts);
    if (open) ledger.violation('stopWins', scenario, `barrier never settled after the stop: ${open}`);

    if (stop === 'opt_out') {
      // A late opt-out still binds every caller from here on.
      if (late) ledger.suppress({ scenario, cause: 'WhatsApp opt-out phrase (judged from the barrier on)', ackedAt: Date.now(), addresses });
      await everyCallerTries(w, scenario, who, email);
    }
  }

  /**
   * The earliest moment the send lane could take the scenario's text (epoch ms), from what the
   * sandbox received: the contact's read receipt plus the pair interval (or the held receipt's end),
   * or the failed first attempt plus the first retry delay. Null when the timing has no such window.
   */
  async function earliestPickup(waId: string, timing: StopTiming, before: number): Promise<number | null> {
    // No receipt seen: nothing is known to hold the text, the lane could take it at once.
    if (timing === 'pacing') return ((await receiptArrival(waId, before)) ?? before - PAIR_INTERVAL_MS) + PAIR_INTERVAL_MS;
    if (timing === 'slow_provider') return ((await receiptArrival(waId, before)) ?? before - SLOW_PROVIDER_HOLD_MS) + Math.max(PAIR_INTERVAL_MS, Math.min(SLOW_PROVIDER_HOLD_MS, SEND_TIMEOUT_MS));
    if (timing === 'retry_backoff') return ((await arrivalOf(waId, 'text', before)) ?? before - BACKOFF_BASE_MS) + Math.max(BACKOFF_BASE_MS, PAIR_INTERVAL_MS);
    return null;
  }

  /** The wamid of each scenario contact's first message (its read receipt names it, not the contact). */
  const receipts = new Map<string, string>();
  const receiptArrival = (waId: string, before: number) => arrivalOf(waId, 'read', before);

  /** When the first call of `type` for `waId` reached the sandbox (a held one included), if it did by `before`. */
  async function arrivalOf(waId: string, type: string, before: number): Promise<number | undefined> {
    const mine = (context: Record<string, string>) => context.type === type && (type === 'read' ? context.message_id === receipts.get(waId) : context.wa_id === waId);
    const calls = (await sandbox.received('meta')).filter((c) => mine(c.context) && Number((c as { arrived_at?: number }).arrived_at ?? 0) <= before);
    // A call still held by a scripted fault is not in the log yet, but its taken fault is.
    const taken = ((await sandbox.request('GET', '/sandbox/control/meta/faults/taken')).body?.taken ?? []) as Array<{ taken_at: number; context: Record<string, string> }>;
    return [...calls.map((c) => Number((c as { arrived_at?: number }).arrived_at)), ...taken.filter((t) => mine(t.context) && t.taken_at <= before).map((t) => t.taken_at)].sort((a, b) => a - b)[0];
  }

  /** Makes `stop` happen and answers when the platform acknowledged it (epoch ms). */
  async function stopNow(w: SafetyOrg, stop: WhatsappStop, who: { contactId: string; conversationId: string }, waId: string, number: string): Promise<number> {
    const inbound = async (text: string) => {
      const answer = expectOk('sandbox inbound', await sandbox.request('POST', '/sandbox/meta/inbound', { from: waId, text, name: 'Safety Person', phone_number_id: number }), 200);
      if (answer.status !== 200) throw new Error(`the gateway answered the ${stop} webhook with ${answer.status}: ${answer.response}`);
      return Date.now();
    };
    switch (stop) {
      case 'reply':
        return inbound(v.pick(HUMAN_REPLIES).text);
      case 'opt_out':
        return inbound(v.pick(OPT_OUT_PHRASES).text);
      case 'long_emoji_reply':
        return inbound(v.pick(LONG_EMOJI_REPLIES));
      case 'handoff':
        expectOk('operator message', await w.gateway.post(`/conversations/${who.conversationId}/messages`, { idempotency_key: `handoff:${randomUUID()}`, text: 'Aqui é a Marina, da equipe. Posso ajudar?' }), 200, 201, 202);
        return Date.now();
      case 'resolved':
        expectOk('resolve', await w.gateway.post(`/conversations/${who.conversationId}/resolve`, {}), 200, 201);
        return Date.now();
      case 'erased':
        expectOk('erase', await w.gateway.post(`/contacts/${who.contactId}/erase`, {}), 200, 201, 202);
        return Date.now();
    }
  }

  /**
   * After an opt-out every sender must refuse the person: an operator's WhatsApp message, a
   * notification on WhatsApp and email, a new follow-up enrollment. Waits until each settled.
   */
  async function everyCallerTries(w: SafetyOrg, scenario: string, who: { contactId: string; conversationId: string }, email: string): Promise<void> {
    const opens: Array<string | null> = [];
    const operator = await w.gateway.post(`/conversations/${who.conversationId}/messages`, { idempotency_key: `after-stop:${randomUUID()}`, text: 'Operator message after the opt-out' });
    if (operator.status < 300) opens.push(await w.settleMessage(who.conversationId, operator.body?.message_id ?? operator.body?.data?.message_id));
    const notification = await w.gateway.post('/notifications', { contact_id: who.contactId, title: 'Safety', body: `Notification after the opt-out to ${email}`, channels: ['whatsapp', 'email'], idempotency_key: `after-stop:${randomUUID()}` });
    if (notification.status < 300) opens.push(await w.settleNotification(notification.body?.id));
    const again = await w.enrollFollowup(w.flows['one-text']!, { ...who, waId: '' }, `after-stop:${randomUUID()}`);
    if (again.status < 300) opens.push(await w.settleFollowup(again.body.data.id, who.conversationId, [FOLLOWUP_TEXT]));
    for (const open of opens) if (open) ledger.violation('suppressed', scenario, `barrier never settled after the opt-out: ${open}`);
  }

  describe('email and outreach: approvals, opt-outs, bounces, unsubscribe links and auto-replies on a second mailbox', () => {
    let e: SafetyOrg;
    let campaignId: string;
    let otherCampaignId: string;
    const grantDefault = `safety-default-${randomUUID().slice(0, 8)}`;
    const grantCampaign = `safety-campaign-${randomUUID().slice(0, 8)}`;

    beforeAll(async () => {
      e = await org('Safety email', 1);
      await e.connectMailbox(grantDefault, 'hello@safety-default.example');
      const campaignMailbox = await e.connectMailbox(grantCampaign, 'sales@safety-campaign.example');
      await e.flow('wait-then-text', waitThenTextFlow(LATER_TEXT));
      const campaign = (name: string) => e.gateway.post('/agentic/outreach/campaigns', { name, goal: 'Book a 20-minute call', allowed_channels: ['email'], max_touches: 3, followup_min_days: 2, followup_max_days: 5, email_sender_id: campaignMailbox });
      campaignId = expectOk('campaign', await campaign('Safety campaign A'), 200, 201).id;
      otherCampaignId = expectOk('campaign', await campaign('Safety campaign B'), 200, 201).id;
    }, 120_000);

    /** A person who wrote in on WhatsApp, with an email address, enrolled in a WhatsApp follow-up and in the campaign. */
    async function person(scenario: string, kind: 'crm' | 'prospect' = 'crm') {
      const waId = freshWaId();
      const email = `${kind}.${waId}@prospect.example`;
      const who = await e.writes(waId, 'Olá, quero saber mais', e.numbers[0]!);
      expectOk('PATCH contact', await e.gateway.patch(`/contacts/${who.contactId}`, { email, kind }), 200);
      const followup = expectOk('enroll follow-up', await e.enrollFollowup(e.flows['wait-then-text']!, who, `safety:${waId}`), 200, 201).data.id as string;
      const enrolled = expectOk(`${scenario}: enroll in campaign`, await e.gateway.post(`/agentic/outreach/campaigns/${campaignId}/enrollments`, { person_kind: kind, person_id: who.contactId }), 200, 201);
      return {
        ...who,
        waId,
        email,
        kind,
        followup,
        enrollmentId: enrolled.id as string,
        addresses: [
          { channel: 'whatsapp', value: waId },
          { channel: 'email', value: email },
        ] as Address[],
      };
    }

    /** Waits for the person's draft, approves it (recording the approval) and waits until the email reached the sandbox. */
    async function approveAndSend(scenario: string, p: { enrollmentId: string; email: string; contactId: string }, options: { editAddressTo?: string } = {}) {
      const card = await until(async () => ((await e.gateway.get('/agentic/outreach/actions?limit=200')).body?.items as ReviewCard[] | undefined)?.find((a) => a.enrollment_id === p.enrollmentId), 90_000);
      if (!card) throw new Error(`${scenario}: no draft reached the review queue`);
      const approving = e.gateway.post(`/agentic/outreach/actions/${card.id}/approve`, {});
      // The address edited while the approval is executed: the wire must still get the approved one.
      const editing = options.editAddressTo ? e.gateway.patch(`/contacts/${p.contactId}`, { email: options.editAddressTo }) : Promise.resolve(undefined);
      const [approved] = await Promise.all([approving, editing]);
      const action = expectOk(`${scenario}: approve`, approved, 200);
      const payload = (action.approved_payload ?? {}) as { to?: string | { email?: string }; subject?: string; body?: string };
      const to = typeof payload.to === 'string' ? payload.to : (payload.to?.email ?? card.to);
      ledger.approve({ scenario, actionId: card.id, grant: grantCampaign, to, subject: payload.subject ?? card.draft?.subject ?? null, body: String(payload.body ?? card.draft?.body ?? ''), personAddresses: [p.email, ...(options.editAddressTo ? [options.editAddressTo] : [])] });
      // With the address edited, refusing to send is as good as sending to the approved address: the invariant judges the wire.
      if (options.editAddressTo) return { actionId: card.id as string, providerId: '', body: '' };
      const sent = await until(async () => (await sandbox.received('nylas')).find((c) => c.context.grant_id === grantCampaign && c.context.to === p.email && c.provider_id), 60_000);
      if (!sent) throw new Error(`${scenario}: the approved email never reached the sandbox`);
      return { actionId: card.id as string, providerId: sent.provider_id!, body: String((sent.body as { body?: unknown } | undefined)?.body ?? '') };
    }

    const enrollment = async (id: string) => expectOk('GET outreach enrollment', await e.gateway.get(`/agentic/outreach/enrollments/${id}`), 200);
    const replyDecisions = async (id: string) => (((await e.gateway.get(`/agentic/outreach/enrollments/${id}/timeline`)).body?.items ?? []) as TimelineItem[]).filter((i) => i.kind === 'decision' && i.data?.trigger_reason === 'reply_received').length;
    /** The enrollment's status and timeline kinds (decision reasons, action statuses), oldest first, for a violation's detail. */
    const timelineSummary = async (id: string) => {
      const en = await enrollment(id);
      const items = (((await e.gateway.get(`/agentic/outreach/enrollments/${id}/timeline`)).body?.items ?? []) as TimelineItem[]).reverse();
      return `${en.status}${en.ended_reason ? ` ${en.ended_reason}` : ''}; ${items.map((i) => (i.kind === 'decision' ? `decision:${i.data?.trigger_reason}` : i.kind === 'action' ? `action:${i.data?.status}` : i.kind === 'email' ? `email:${i.data?.direction}` : i.kind)).join(' → ')}`;
    };
    const inbound = async (p: { email: string }, providerId: string, body: string, extra: { subject?: string; headers?: { name: string; value: string }[] } = {}) => {
      const answer = expectOk('sandbox nylas inbound', await sandbox.request('POST', '/sandbox/nylas/inbound', { grant_id: grantCampaign, from: p.email, from_name: 'Safety Prospect', body, reply_to_message_id: providerId, ...extra }), 200, 201);
      const status = answer.deliveries?.[0]?.status;
      if (status !== 200) throw new Error(`the gateway answered the Nylas webhook with ${status}`);
      return Date.now();
    };

    /** Every caller tries to reach an opted-out person; each attempt waits until it settled. */
    async function everyCallerTriesEmail(scenario: string, p: { contactId: string; conversationId: string }, channels: Array<'whatsapp' | 'email'>) {
      const opens: Array<string | null> = [];
      const notification = await e.gateway.post('/notifications', { contact_id: p.contactId, title: 'Safety', body: 'Notification after the stop', channels, idempotency_key: `after-stop:${randomUUID()}` });
      if (notification.status < 300) opens.push(await e.settleNotification(notification.body?.id));
      const conversations = expectOk('GET conversations', await e.gateway.get(`/conversations?contact_id=${p.contactId}&channel=email`), 200).items as Array<{ id: string }>;
      for (const c of conversations) {
        const operator = await e.gateway.post(`/conversations/${c.id}/messages`, { idempotency_key: `after-stop:${randomUUID()}`, text: 'Operator email after the stop', subject: 'Following up' });
        if (operator.status < 300) opens.push(await e.settleMessage(c.id, operator.body?.message_id ?? operator.body?.data?.message_id));
      }
      if (channels.includes('whatsapp')) {
        const operator = await e.gateway.post(`/conversations/${p.conversationId}/messages`, { idempotency_key: `after-stop:${randomUUID()}`, text: 'Operator WhatsApp after the stop' });
        if (operator.status < 300) opens.push(await e.settleMessage(p.conversationId, operator.body?.message_id ?? operator.body?.data?.message_id));
      }
      for (const open of opens) if (open) ledger.violation('suppressed', scenario, `barrier never settled after the stop: ${open}`);
    }

    it('an email opt-out (EN/PT/ES) ends the enrollment and suppresses every address of the person for every caller', async () => {
      const phrases = [
        ...v.sample(
          OPT_OUT_PHRASES.filter((p) => p.language === 'en'),
          1,
        ),
        ...v.sample(
          OPT_OUT_PHRASES.filter((p) => p.language === 'pt'),
          1,
        ),
        ...v.sample(
          OPT_OUT_PHRASES.filter((p) => p.language === 'es'),
          1,
        ),
      ];
      await pool(
        3,
        phrases.map((phrase) => async () => {
          const scenario = `email opt-out "${phrase.text}"`;
          const p = await person(scenario);
          const sent = await approveAndSend(scenario, p);
          const ackedAt = await inbound(p, sent.providerId, phrase.text);
          ledger.stop({ scenario, kind: 'email opt-out', ackedAt, addresses: p.addresses, texts: [LATER_TEXT] });
          ledger.suppress({ scenario, cause: 'email opt-out phrase', ackedAt, addresses: p.addresses });
          const ended = await until(async () => ((await enrollment(p.enrollmentId)).status === 'ended' ? true : undefined), 45_000);
          if (!ended) ledger.violation('stopWins', scenario, `outreach enrollment ${p.enrollmentId} still live 45 s after the opt-out (${await timelineSummary(p.enrollmentId)})`);
          const open = await e.settleFollowup(p.followup, p.conversationId, [LATER_TEXT]);
          if (open) ledger.violation('stopWins', scenario, `WhatsApp follow-up still open after the email opt-out: ${open}`);
          await everyCallerTriesEmail(scenario, p, ['whatsapp', 'email']);
        }),
      );
    }, 400_000);

    it("a WhatsApp STOP ends the person's email outreach enrollment, and the draft waiting for review never reaches the wire (stop means stop on every channel)", async () => {
      const scenario = 'WhatsApp STOP during an email campaign';
      const p = await person(scenario);
      const card = await until(async () => ((await e.gateway.get('/agentic/outreach/actions?limit=200')).body?.items as ReviewCard[] | undefined)?.find((a) => a.enrollment_id === p.enrollmentId), 90_000);
      if (!card) throw new Error(`${scenario}: no draft reached the review queue`);
      const stop = expectOk('sandbox inbound', await sandbox.request('POST', '/sandbox/meta/inbound', { from: p.waId, text: 'STOP', name: 'Safety Person', phone_number_id: e.numbers[0]! }), 200);
      if (stop.status !== 200) throw new Error(`${scenario}: the gateway answered the STOP with ${stop.status}`);
      const ackedAt = Date.now();
      ledger.stop({ scenario, kind: 'WhatsApp STOP', ackedAt, addresses: p.addresses, texts: [LATER_TEXT] });
      ledger.suppress({ scenario, cause: 'WhatsApp STOP', ackedAt, addresses: p.addresses });
      const ended = await until(async () => ((await enrollment(p.enrollmentId)).status === 'ended' ? true : undefined), 45_000);
      if (!ended) ledger.violation('stopWins', scenario, `outreach enrollment ${p.enrollmentId} still live 45 s after the WhatsApp STOP (${await timelineSummary(p.enrollmentId)})`);
      // A reviewer who approves the old card afterwards: refused, or at least nothing reaches the person (the invariants judge the wire).
      const approved = await e.gateway.post(`/agentic/outreach/actions/${card.id}/approve`, {});
      if (approved.status < 300) ledger.violation('stopWins', scenario, `the draft of an opted-out person was approved (${approved.status})`);
      await everyCallerTriesEmail(scenario, p, ['whatsapp', 'email']);
    }, 200_000);

    it('a bounce and an unsubscribe link suppress the address for every caller', async () => {
      await pool(2, [
        async () => {
          const scenario = 'email bounce';
          const p = await person(scenario);
          await approveAndSend(scenario, p);
          const answer = await sandbox.request('POST', '/sandbox/nylas/bounce', { grant_id: grantCampaign, address: p.email });
          if (answer.body?.status !== 200) throw new Error(`${scenario}: the gateway answered the bounce webhook with ${answer.body?.status}`);
          const ackedAt = Date.now();
          ledger.suppress({ scenario, cause: 'bounce', ackedAt, addresses: [{ channel: 'email', value: p.email }] });
          // A bounce closes the email channel and leaves the enrollment live (seed 003 §4.7): the
          // barrier is the address on the do-not-contact list, as every sender reads it.
          const listed = await until(async () => {
            const list = await e.gateway.get(`/suppressions?channel=email&q=${encodeURIComponent(p.email)}`);
            return (list.body?.items as Array<{ value: string; reason: string | null }> | undefined)?.find((i) => i.value === p.email.toLowerCase());
          }, 45_000);
          if (!listed) ledger.violation('suppressed', scenario, `${p.email} not on the do-not-contact list 45 s after the bounce webhook`);
          await everyCallerTriesEmail(scenario, p, ['email']);
        },
        async () => {
          const scenario = 'email unsubscribe link';
          const p = await person(scenario);
          const sent = await approveAndSend(scenario, p);
          const link = /https?:\/\/[^\s"<>]+\/nylas\/email\/unsubscribe\?token=[^\s"<>&]+/.exec(sent.body)?.[0];
          if (!link) throw new Error(`${scenario}: no unsubscribe link in the sent email`);
          const url = new URL(link);
          const answer = await fetch(`${platform.url('gateway')}${url.pathname}${url.search}`, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
          if (answer.status !== 200) throw new Error(`${scenario}: the unsubscribe link answered ${answer.status}`);
          const ackedAt = Date.now();
          ledger.suppress({ scenario, cause: 'unsubscribe link', ackedAt, addresses: [{ channel: 'email', value: p.email }] });
          await everyCallerTriesEmail(scenario, p, ['email']);
        },
      ]);
    }, 300_000);

    it('auto-replies (by header and by subject, in several languages, some saying "unsubscribe") stop, opt out and interrupt nothing', async () => {
      const cases = v.sample(AUTO_REPLIES, 6);
      await pool(
        3,
        cases.map((auto) => async () => {
          const scenario = `auto-reply by ${auto.by} ${auto.subject ?? auto.headers.map((h) => `${h.name}: ${h.value}`).join(', ')}`;
          ledger.ran('autoReplyInert', scenario);
          const p = await person(scenario);
          const sent = await approveAndSend(scenario, p);
          await inbound(p, sent.providerId, auto.body, { subject: auto.subject, headers: auto.headers });
          // Barrier: a human reply in the same thread must interrupt exactly once; the auto-reply
          // before it, not at all.
          const human = v.pick(HUMAN_REPLIES).text;
          const humanSentAt = Date.now();
          await inbound(p, sent.providerId, human);
          // Up to 120 s: a loaded 2-core machine once took longer than 60 s to show the reply's decision.
          const interrupted = await until(async () => ((await replyDecisions(p.enrollmentId)) >= 1 || (await enrollment(p.enrollmentId)).status === 'ended' ? true : undefined), 120_000);
          if (!interrupted) ledger.violation('autoReplyInert', scenario, `barrier never settled: the human reply after the auto-reply neither interrupted nor found the enrollment ended (${await timelineSummary(p.enrollmentId)})`);
          const after = await enrollment(p.enrollmentId);
          const decisions = await replyDecisions(p.enrollmentId);
          if (decisions > 1) ledger.violation('autoReplyInert', scenario, `${decisions} reply decisions for one human reply (the auto-reply interrupted too)`);
          if (after.status === 'ended') ledger.violation('autoReplyInert', scenario, `outreach enrollment ended (${after.ended_reason})`);
          const contact = await e.contact(p.contactId);
          if (contact.opted_out_at) ledger.violation('autoReplyInert', scenario, `contact opted out at ${contact.opted_out_at}`);
          // The human reply may stop the WhatsApp follow-up (a reply on any channel); the auto-reply before it may not.
          const followup = (await e.followup(p.followup)).enrollment;
          const finishedAt = followup.finished_at ? Date.parse(followup.finished_at) : null;
          if (finishedAt !== null && (followup.reason === 'opted_out' || finishedAt < humanSentAt)) ledger.violation('autoReplyInert', scenario, `WhatsApp follow-up ${p.followup} ${followup.status} (${followup.reason}) at ${followup.finished_at}, before the human reply`);
          // Not suppressed: an email notification still reaches the wire.
          const notification = expectOk('notification', await e.gateway.post('/notifications', { contact_id: p.contactId, title: 'Safety', body: `Still reachable ${randomUUID().slice(0, 8)}`, channels: ['email'] }), 200, 201);
          await e.settleNotification(notification.id);
          const delivery = (await e.notification(notification.id)).deliveries[0];
          if (delivery?.status !== 'sent' && delivery?.status !== 'delivered') ledger.violation('autoReplyInert', scenario, `an email notification after the auto-reply ended ${delivery?.status} (${delivery?.error_code})`);
        }),
      );
    }, 620_000);

    it('a LinkedIn opt-out (a Unipile message) suppresses the person on LinkedIn, email and WhatsApp for every caller', async () => {
      const account = `safety-li-${randomUUID().slice(0, 8)}`;
      expectOk('sandbox unipile account', await sandbox.request('POST', '/sandbox/unipile/accounts', { account_id: account, api_key: 'sandbox-unipile-api-key', name: 'Safety LinkedIn' }), 200, 201);
      expectOk('POST /senders/accounts linkedin', await e.gateway.post('/senders/accounts', { channel: 'linkedin', account_id: account, address: 'Safety LinkedIn', api_key: 'sandbox-unipile-api-key', label: 'Safety LinkedIn' }), 200, 201);
      const phrases = v.sample(OPT_OUT_PHRASES, 2);
      await pool(
        2,
        phrases.map((phrase) => async () => {
          const waId = freshWaId();
          const memberId = `ACoSAFETY${waId}`;
          const email = `li.${waId}@prospect.example`;
          const scenario = `linkedin opt-out "${phrase.text}" (${memberId})`;
          const contact = expectOk('POST /contacts', await e.gateway.post('/contacts', { kind: 'crm', name: 'Safety LinkedIn Person', phone: `+${waId}`, email, linkedin_provider_id: memberId }), 200, 201);
          const unipile = async (text: string) => {
            const answer = expectOk('sandbox unipile inbound', await sandbox.request('POST', '/sandbox/unipile/inbound', { account_id: account, from_provider_id: memberId, text, from_name: 'Safety LinkedIn Person' }), 200, 201);
            if (answer.delivery?.status !== 200) throw new Error(`${scenario}: the gateway answered the Unipile webhook with ${answer.delivery?.status}`);
            return Date.now();
          };
          await unipile(v.pick(HUMAN_REPLIES).text);
          const conversation = await until(async () => (expectOk('GET conversations', await e.gateway.get(`/conversations?contact_id=${contact.id}&channel=linkedin`), 200).items as Array<{ id: string }>)[0]?.id);
          if (!conversation) throw new Error(`${scenario}: the LinkedIn message made no conversation`);
          const addresses: Address[] = [
            { channel: 'linkedin', value: memberId },
            { channel: 'email', value: email },
            { channel: 'whatsapp', value: waId },
          ];
          const ackedAt = await unipile(phrase.text);
          ledger.suppress({ scenario, cause: 'LinkedIn opt-out phrase', ackedAt, addresses });
          await until(async () => (await e.contact(contact.id)).opted_out_at, 30_000);
          const opens: Array<string | null> = [];
          const operator = await e.gateway.post(`/conversations/${conversation}/messages`, { idempotency_key: `after-stop:${randomUUID()}`, text: 'Operator LinkedIn message after the opt-out' });
          if (operator.status < 300) opens.push(await e.settleMessage(conversation, operator.body?.message_id ?? operator.body?.data?.message_id));
          const notification = await e.gateway.post('/notifications', { contact_id: contact.id, title: 'Safety', body: 'Notification after the LinkedIn opt-out', channels: ['whatsapp', 'email'], idempotency_key: `after-stop:${randomUUID()}` });
          if (notification.status < 300) opens.push(await e.settleNotification(notification.body?.id));
          for (const open of opens) if (open) ledger.violation('suppressed', scenario, `barrier never settled after the opt-out: ${open}`);
        }),
      );
    }, 300_000);

    it('the approved address is the one the wire gets, even when the contact is edited during the send', async () => {
      const scenario = 'approved address, edited while sending';
      const p = await person(scenario);
      await approveAndSend(scenario, p, { editAddressTo: `edited.${p.waId}@elsewhere.example` });
      // Barrier: the action settled (executed or failed): nothing more leaves for this approval.
      await until(async () => {
        const items = ((await e.gateway.get(`/agentic/outreach/enrollments/${p.enrollmentId}/timeline`)).body?.items ?? []) as TimelineItem[];
        return items.some((i) => i.kind === 'action' && ['executed', 'failed', 'invalidated'].includes(i.data?.status ?? ''));
      }, 45_000);
    }, 200_000);

    it('one live outreach enrollment per person across campaigns (a second campaign, a prospect promoted to CRM)', async () => {
      const live = async (personId: string) => {
        let n = 0;
        for (const c of [campaignId, otherCampaignId]) {
          const items = expectOk('GET campaign enrollments', await e.gateway.get(`/agentic/outreach/campaigns/${c}/enrollments?limit=500`), 200).items as Array<Record<string, unknown>>;
          n += items.filter((i) => i.person_id === personId && i.status !== 'ended').length;
        }
        return n;
      };
      await pool(2, [
        async () => {
          const scenario = 'one live: crm person into a second campaign';
          ledger.ran('oneLive', scenario);
          const p = await person(scenario);
          const second = await e.gateway.post(`/agentic/outreach/campaigns/${otherCampaignId}/enrollments`, { person_kind: 'crm', person_id: p.contactId });
          const n = await live(p.contactId);
          if (n > 1) ledger.violation('oneLive', scenario, `${n} live enrollments (second enroll answered ${second.status})`);
        },
        async () => {
          const scenario = 'one live: prospect promoted to CRM, then into a second campaign';
          ledger.ran('oneLive', scenario);
          const p = await person(scenario, 'prospect');
          expectOk('promote', await e.gateway.patch(`/contacts/${p.contactId}`, { kind: 'crm' }), 200);
          const second = await e.gateway.post(`/agentic/outreach/campaigns/${otherCampaignId}/enrollments`, { person_kind: 'crm', person_id: p.contactId });
          const n = await live(p.contactId);
          if (n > 1) ledger.violation('oneLive', scenario, `${n} live enrollments (second enroll as crm answered ${second.status})`);
        },
        async () => {
          const scenario = 'one live: prospect promoted by a real reply while live elsewhere';
          ledger.ran('oneLive', scenario);
          const p = await person(scenario, 'prospect');
          // Enrolled as crm in the other campaign while the prospect enrollment runs (the index is per kind).
          await e.gateway.post(`/agentic/outreach/campaigns/${otherCampaignId}/enrollments`, { person_kind: 'crm', person_id: p.contactId });
          const sent = await approveAndSend(scenario, p);
          await inbound(p, sent.providerId, v.pick(HUMAN_REPLIES).text);
          await until(async () => ((await replyDecisions(p.enrollmentId)) >= 1 || (await enrollment(p.enrollmentId)).status === 'ended' ? true : undefined), 45_000);
          const n = await live(p.contactId);
          if (n > 1) ledger.violation('oneLive', scenario, `${n} live enrollments after the promoting reply`);
        },
      ]);
    }, 400_000);
  });

  describe('the invariants over the sandbox log', () => {
    it('prints one row per invariant and finds no violation', async () => {
      const log = await wireLog(sandbox);
      const violations = ledger.check(log);
      const report = [`safety suite, seed ${SEED}: ${log.length} sends at the sandbox`, ledger.table(violations), ...violations.map((x) => `  ✗ [${x.invariant}] ${x.scenario}: ${x.detail}`)].join('\n');
      process.stdout.write(`\n${report}\n`);
      expect(Object.values(ledger.runs).every((s) => s.size > 0)).toBe(true);
      expect(violations).toEqual([]);
    }, 60_000);
  });
});
