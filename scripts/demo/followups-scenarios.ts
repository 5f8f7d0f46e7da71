import { DateTime } from 'luxon';
import { type ContactRef, conversationMessages, contactWrites, type DemoContext, demoNumber } from './demo-context.js';
import { DemoStepError, expectStatus, waitFor } from './http-clients.js';
import { SEED_002_FLOW_EXAMPLE as SEED_002_FLOW_BODY } from '@touchpoint/contracts';

/** A send window open every hour of every day, for the copies the demo runs outside business hours. */
const ALWAYS_OPEN_WINDOW = { send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' };

/** What the seed-002 scenario did, for the black-box suite to check. */
export interface SeedFlowResult {
  flowId: string;
  /** The flow whose reminder was sent now (the seed flow, or its always-open copy at night). */
  sentFlowId: string;
  enrollmentId: string;
  messageId: string;
  wamid: string;
  statuses: string[];
  contact: ContactRef;
  /** Set when the seed flow's own window was closed and its reminder deferred to this moment. */
  deferredTo?: string;
}

/** What the cancel-on-reply scenario did. */
export interface CancelOnReplyResult {
  flowId: string;
  enrollmentId: string;
  enrollment: Record<string, any>;
  effects: Array<Record<string, any>>;
  contact: ContactRef;
}

/** Creates, publishes and activates a flow from `body`; answers its id. */
export async function activeFlow(ctx: DemoContext, body: object, section: string): Promise<string> {
  const created = expectStatus('POST /ai/followup-flows', await ctx.gateway.post('/ai/followup-flows', { ...body, customer_id: ctx.organizationId }), 201).data;
  ctx.say(section, `flow ${created.id} "${created.name}" created: status ${created.status}, revision ${created.revision}`);
  const published = expectStatus('publish', await ctx.gateway.post(`/ai/followup-flows/${created.id}/publish`, { customer_id: ctx.organizationId, expected_revision: created.revision }), 200).data;
  const active = expectStatus('activate', await ctx.gateway.patch(`/ai/followup-flows/${created.id}`, { customer_id: ctx.organizationId, expected_revision: published.revision, status: 'active' }), 200).data;
  ctx.say(section, `flow ${created.id} published (version ${published.published_version_id ?? published.current_version_id ?? '?'}) and ${active.status}`);
  return created.id;
}

async function enroll(ctx: DemoContext, flowId: string, who: ContactRef, operationKey: string): Promise<Record<string, any>> {
  const answer = await ctx.gateway.post('/ai/followups/enrollments', { customer_id: ctx.organizationId, flow_id: flowId, contact_id: who.contactId, conversation_id: who.conversationId, operation_key: operationKey });
  return expectStatus('POST /ai/followups/enrollments', answer, 200, 201).data;
}

export async function getEnrollment(ctx: DemoContext, id: string): Promise<{ enrollment: Record<string, any>; effects: Array<Record<string, any>> }> {
  return expectStatus('GET enrollment', await ctx.gateway.get(`/ai/followups/enrollments/${id}?customer_id=${ctx.organizationId}`), 200).data;
}

/** Whether `at` is inside the seed flow's own window (Mon–Fri 09:00–20:00 America/Sao_Paulo). */
function insideSeedWindow(at: Date): boolean {
  const s = SEED_002_FLOW_BODY.settings as unknown as { send_start_hour: number; send_end_hour: number; send_days: number[]; timezone: string };
  const local = DateTime.fromJSDate(at).setZone(s.timezone);
  return s.send_days.includes(local.weekday) && local.hour >= s.send_start_hour && local.hour < s.send_end_hour;
}

/**
 * Seed 002's example flow end to end: created from its documented body, published, activated; a
 * contact who wrote in is enrolled with an `operation_key` (sent twice: same enrollment); the
 * 4-hour wait runs now (`advance_now`); the reminder goes through the outbox to the sandbox's
 * Meta; `sent → delivered → read` come back as signed status webhooks; the enrollment completes.
 * Outside the flow's own window the seed flow's reminder is deferred (shown), and the rest runs
 * on a copy whose window is always open.
 */
export async function seedFlowScenario(ctx: DemoContext): Promise<SeedFlowResult> {
  const section = 'follow-ups';
  const who = await contactWrites(ctx, demoNumber(ctx, 1), 'Oi, recebi a proposta', 'Ana Souza');
  ctx.say(section, `contact ${who.contactId} (+${who.waId}) wrote in: conversation ${who.conversationId}`);
  const flowId = await activeFlow(ctx, SEED_002_FLOW_BODY, section);

  let sentFlowId = flowId;
  let deferredTo: string | undefined;
  let enrollment = await enrollAndAdvance(ctx, flowId, who, `demo:${ctx.runTag}:seed-002:${who.contactId}`, section);
  if (!insideSeedWindow(new Date())) {
    const deferred = await waitFor(
      'the reminder deferred to the send window',
      async () => {
        const e = (await getEnrollment(ctx, enrollment.id)).enrollment;
        return e.next_run_at && new Date(e.next_run_at).getTime() > Date.now() + 60_000 ? e : undefined;
      },
      ctx.stepTimeoutMs,
    );
    deferredTo = deferred.next_run_at;
    ctx.say(section, `enrollment ${enrollment.id}: outside the flow's window (Mon–Fri 09–20 America/Sao_Paulo), the reminder waits until ${deferredTo}`);
    const copy = { ...SEED_002_FLOW_BODY, name: `${SEED_002_FLOW_BODY.name} (demo copy, window always open)`, settings: { ...SEED_002_FLOW_BODY.settings, ...ALWAYS_OPEN_WINDOW } };
    ctx.say(section, 'to show the send right now, the same flow with a window open at every hour:');
    sentFlowId = await activeFlow(ctx, copy, section);
    // The first enrollment would end the copy's at once (one live follow-up per contact): cancel it.
    const current = (await getEnrollment(ctx, enrollment.id)).enrollment;
    const cancelled = await ctx.gateway.post(`/ai/followups/enrollments/${enrollment.id}/control`, { customer_id: ctx.organizationId, expected_revision: current.revision, action: 'cancel', reason: 'demo: replaced by the always-open copy' });
    if (cancelled.status === 200) ctx.say(section, `enrollment ${enrollment.id} ${cancelled.body.data.status} (${cancelled.body.data.reason})`);
    enrollment = await enrollAndAdvance(ctx, sentFlowId, who, `demo:${ctx.runTag}:seed-002-open:${who.contactId}`, section);
  }

  const sent = await waitFor(
    'the reminder handed to the outbox and accepted',
    async () => {
      const view = await getEnrollment(ctx, enrollment.id);
      const effect = view.effects.find((e) => e.kind === 'send');
      return effect?.status === 'sent' && effect.message_id ? effect : undefined;
    },
    ctx.stepTimeoutMs * 2,
  );
  const wire = await waitFor('the reminder at the sandbox', async () => (await ctx.sandbox.received('meta')).find((c) => c.context.wa_id === who.waId && (c.body as any)?.text?.body === sent.text && c.provider_id), ctx.stepTimeoutMs);
  ctx.say(section, `reminder "${sent.text}" → outbox → sandbox Meta: message ${sent.message_id}, wamid ${wire.provider_id}`);

  const seen: string[] = [];
  await waitFor(
    'sent → delivered → read by status webhook',
    async () => {
      const message = (await conversationMessages(ctx, who.conversationId)).find((m) => m.id === sent.message_id);
      for (const [status, at] of [
        ['sent', message?.sent_at],
        ['delivered', message?.delivered_at],
        ['read', message?.read_at],
      ] as const)
        if (at && !seen.includes(status)) seen.push(status);
      return message?.status === 'read' && message.read_at;
    },
    ctx.stepTimeoutMs,
  );
  const deliveries = ((await ctx.sandbox.request('GET', '/sandbox/meta/webhooks')).body?.deliveries ?? []) as Array<{ kind: string; payload: any; status: number }>;
  const signed = deliveries.filter((d) => d.kind === 'status' && JSON.stringify(d.payload).includes(String(wire.provider_id)));
  ctx.say(section, `message ${sent.message_id}: ${seen.join(' → ')} (${signed.length} signed status webhooks, gateway answered ${[...new Set(signed.map((d) => d.status))].join('/') || 'n/a'})`);

  const done = await waitFor(
    'enrollment completed',
    async () => {
      const e = (await getEnrollment(ctx, enrollment.id)).enrollment;
      return e.status === 'completed' ? e : undefined;
    },
    ctx.stepTimeoutMs,
  );
  ctx.say(section, `enrollment ${enrollment.id} ${done.status} (${done.reason})`);
  return { flowId, sentFlowId, enrollmentId: enrollment.id, messageId: sent.message_id, wamid: String(wire.provider_id), statuses: seen, contact: who, deferredTo };
}

async function enrollAndAdvance(ctx: DemoContext, flowId: string, who: ContactRef, operationKey: string, section: string): Promise<Record<string, any>> {
  const enrollment = await enroll(ctx, flowId, who, operationKey);
  const again = await enroll(ctx, flowId, who, operationKey);
  if (again.id !== enrollment.id) throw new DemoStepError(`the same operation_key made two enrollments (${enrollment.id}, ${again.id})`);
  ctx.say(section, `enrollment ${enrollment.id} (operation_key ${operationKey}; sent twice, one enrollment): ${enrollment.status} at node "${enrollment.node_id}", due ${enrollment.next_run_at}`);
  const advanced = expectStatus('advance_now', await ctx.gateway.post(`/ai/followups/enrollments/${enrollment.id}/control`, { customer_id: ctx.organizationId, expected_revision: enrollment.revision, action: 'advance_now' }), 200).data;
  ctx.say(section, `enrollment ${enrollment.id}: advance_now, the wait runs now (revision ${advanced.revision})`);
  return advanced;
}

/** trigger → text → wait 1 h → text → end, window always open, `cancel_on_reply`. */
export function twoTextsFlowBody(): object {
  return {
    name: 'Detalhes e lembrete (cancel_on_reply)',
    graph: {
      nodes: [
        { id: 'inicio', type: 'trigger', config: {} },
        { id: 'detalhes', type: 'action', config: { mode: 'text', body: 'Seguem os detalhes que você pediu.' } },
        { id: 'espera', type: 'wait', config: { mode: 'fixed', duration_ms: 3_600_000 } },
        { id: 'lembrete', type: 'action', config: { mode: 'text', body: 'Conseguiu ver?' } },
        { id: 'fim', type: 'end', config: { outcome: 'exhausted' } },
      ],
      edges: [
        { id: 'e1', source: 'inicio', target: 'detalhes', condition: { type: 'always' } },
        { id: 'e2', source: 'detalhes', target: 'espera', condition: { type: 'always' } },
        { id: 'e3', source: 'espera', target: 'lembrete', condition: { type: 'always' } },
        { id: 'e4', source: 'lembrete', target: 'fim', condition: { type: 'always' } },
      ],
    },
    settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN_WINDOW },
  };
}

/**
 * `cancel_on_reply`: a contact writes, is enrolled in a flow whose first text is queued at once
 * (it waits in the outbox behind the 6.5 s pacing of the read receipt just sent to the same
 * contact); the contact replies through the sandbox before it leaves; the enrollment completes as
 * `replied` and the queued follow-up is cancelled, never reaching the sandbox.
 */
export async function cancelOnReplyScenario(ctx: DemoContext): Promise<CancelOnReplyResult> {
  const section = 'cancel_on_reply';
  const flowId = await activeFlow(ctx, twoTextsFlowBody(), section);
  const who = await contactWrites(ctx, demoNumber(ctx, 2), 'Pode me mandar os detalhes?', 'Bruno Lima');
  ctx.say(section, `contact ${who.contactId} (+${who.waId}) wrote in: conversation ${who.conversationId}`);
  const enrollment = await enroll(ctx, flowId, who, `demo:${ctx.runTag}:cancel-on-reply:${who.contactId}`);
  ctx.say(section, `enrollment ${enrollment.id}: ${enrollment.status}; its first text is queued now`);
  const queued = await waitFor('the first text queued', async () => (await getEnrollment(ctx, enrollment.id)).effects.find((e) => e.kind === 'send'), ctx.stepTimeoutMs);
  ctx.say(section, `follow-up effect ${queued.id} "${queued.text}": ${queued.status}`);
  await contactWrites(ctx, who.waId, 'Já resolvi, obrigado!', 'Bruno Lima');
  ctx.say(section, `contact ${who.contactId} replied through the sandbox: "Já resolvi, obrigado!"`);
  const view = await waitFor(
    'the enrollment stopped by the reply',
    async () => {
      const v = await getEnrollment(ctx, enrollment.id);
      const effect = v.effects.find((e) => e.id === queued.id);
      return v.enrollment.status !== 'active' && effect && effect.status !== 'queued' && effect.status !== 'pending' ? v : undefined;
    },
    ctx.stepTimeoutMs,
  );
  const effect = view.effects.find((e) => e.id === queued.id)!;
  ctx.say(section, `enrollment ${enrollment.id} ${view.enrollment.status} (${view.enrollment.reason}); follow-up effect ${effect.id} ${effect.status}`);
  if (effect.status === 'sent') ctx.say(section, 'the text had already left before the reply (a busy machine); the reply still stopped the rest of the flow');
  return { flowId, enrollmentId: enrollment.id, enrollment: view.enrollment, effects: view.effects, contact: who };
}
