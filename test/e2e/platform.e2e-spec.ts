import { loadAll } from 'js-yaml';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '@touchpoint/testing';
import { activeFlow, getEnrollment, twoTextsFlowBody } from '../../scripts/demo/followups-scenarios.js';
import { contactWrites, conversationMessages, type DemoContext } from '../../scripts/demo/demo-context.js';
import { GatewayClient, SandboxClient } from '../../scripts/demo/http-clients.js';
import { type DemoResult, demoPhoneNumberId, runDemo } from '../../scripts/demo/run-demo.js';
import { SEED_002_FLOW_EXAMPLE as SEED_002_FLOW_BODY } from '@touchpoint/contracts';
import { STARTED_PROCESSES } from '../../scripts/start/start.config.js';
import { Platform, type Tenant } from './platform.js';

/**
 * The black-box suite: the platform started as `npm start -- --no-demo` starts it,
 * driven only through the gateway's REST API, the signed provider webhooks and the sandbox's
 * control API (plus the admin CLI, an operator's tool). One platform for the whole file: starting
 * eight processes is the expensive part.
 */

const soon = <T>(probe: () => Promise<T>, timeoutMs = 45_000) => eventually(probe, timeoutMs, 250);
const UNKNOWN = '22222222-2222-4222-8222-222222222222';
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** trigger → text → end, window always open: one send per enrollment, at once. */
const oneTextFlow = (text: string) => ({
  name: `Uma mensagem ${randomUUID().slice(0, 8)}`,
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
  settings: { trigger: { kind: 'manual', cancel_on_reply: false }, handoff_policy: 'pause', send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' },
});

/** A WhatsApp text message as the sandbox received it. */
type MetaText = { type?: string; text?: { body?: string } };
/** The parts of a k8s manifest document this file reads (a Deployment's probes and scrape annotation). */
type K8sDocument = {
  kind?: string;
  metadata: { name: string };
  spec: { template: { metadata?: { annotations?: Record<string, string> }; spec: { containers: Array<Record<string, { httpGet?: { path?: string } } | undefined>> } } };
};

describe('Touchpoint, black box', () => {
  let platform: Platform;
  let sandbox: SandboxClient;
  let a: Tenant;
  let b: Tenant;
  let ga: GatewayClient;
  let gb: GatewayClient;
  let demo: DemoResult;
  let transcript = '';
  const quiet = () => undefined;
  const ctxOf = (tenant: Tenant, gateway: GatewayClient): DemoContext => ({ gateway, sandbox, organizationId: tenant.organizationId, phoneNumberId: demoPhoneNumberId(tenant.organizationId), say: quiet, stepTimeoutMs: 45_000, runTag: 'e2e' });

  beforeAll(async () => {
    // A short send deadline, so a held request becomes an ambiguous send within the test.
    platform = await Platform.start('e2e_black_box', { WHATSAPP_SEND_TIMEOUT_MS: '2000' });
    sandbox = new SandboxClient(platform.url('sandbox'));
    a = await platform.tenant('Tenant A');
    b = await platform.tenant('Tenant B');
    ga = new GatewayClient(platform.url('gateway'), a.secret);
    gb = new GatewayClient(platform.url('gateway'), b.secret);
  }, 240_000);
  afterAll(async () => {
    await platform?.stop();
  }, 120_000);

  describe('the demo', () => {
    beforeAll(async () => {
      demo = await runDemo({ gatewayUrl: platform.url('gateway'), sandboxUrl: platform.url('sandbox'), secret: a.secret, organizationId: a.organizationId, write: (line) => (transcript += line), stepTimeoutMs: 45_000 });
    }, 300_000);

    it('runs every scenario without a failure and prints ids and states', () => {
      expect(demo.failures).toEqual([]);
      expect(transcript).toContain(`organization ${a.organizationId}`);
      expect(transcript).toMatch(/flow [0-9a-f-]{36} "Retomada em 4 horas" created: status draft, revision 1/);
    });

    it('seed 002 example: the reminder reaches the sandbox once, sent → delivered → read arrive by signed webhook, the enrollment completes', async () => {
      const s = demo.seedFlow!;
      expect(s.statuses).toEqual(['sent', 'delivered', 'read']);
      const view = await getEnrollment(ctxOf(a, ga), s.enrollmentId);
      expect(view.enrollment).toMatchObject({ status: 'completed', reason: 'exhausted' });
      expect(view.effects).toEqual([expect.objectContaining({ kind: 'send', status: 'sent', text: 'Oi! Conseguiu ver a proposta que enviamos?', message_id: s.messageId })]);
      const calls = (await sandbox.received('meta')).filter((c) => c.context.wa_id === s.contact.waId && (c.body as MetaText | undefined)?.text?.body === 'Oi! Conseguiu ver a proposta que enviamos?');
      expect(calls).toHaveLength(1);
      const message = (await conversationMessages(ctxOf(a, ga), s.contact.conversationId)).find((m) => m.id === s.messageId);
      expect(message).toMatchObject({ direction: 'outbound', status: 'read', external_id: s.wamid });
      // The seed flow itself is live and published from its documented body.
      const flow = await ga.get(`/ai/followup-flows/${s.flowId}?customer_id=${a.organizationId}`);
      expect(flow.body.data).toMatchObject({ name: SEED_002_FLOW_BODY.name, status: 'active' });
    });

    it('cancel_on_reply: the reply stops the enrollment and cancels its queued follow-up, which never reaches the sandbox', async () => {
      const c = demo.cancelOnReply!;
      expect(c.enrollment).toMatchObject({ status: 'completed', reason: 'replied' });
      expect(c.effects.filter((e) => e.kind === 'send').map((e) => e.status)).toEqual(['cancelled']);
      const calls = (await sandbox.received('meta')).filter((call) => call.context.wa_id === c.contact.waId && (call.body as MetaText | undefined)?.type === 'text');
      expect(calls).toEqual([]);
    });

    it('an inbound flood from one contact is throttled: the webhooks are all answered 200, only the allowed messages are stored', async () => {
      const f = demo.flood!;
      expect(f.webhookStatuses.every((s) => s === 200)).toBe(true);
      expect(f.stored).toBeGreaterThanOrEqual(1);
      expect(f.stored).toBeLessThan(f.sent);
      const inbound = (await conversationMessages(ctxOf(a, ga), f.conversationId)).filter((m) => m.direction === 'inbound');
      expect(inbound).toHaveLength(f.stored);
    });

    it('outreach: a mailbox connected over REST, the model decides and drafts, the draft is approved and the email reaches the sandbox Nylas', async () => {
      const o = demo.outreach!;
      expect(o.campaignId).toMatch(/^[0-9a-f-]{36}$/);
      // The decision and the draft by the sandbox model, the draft approved through the review route.
      expect(o.actionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(o.timeline).toEqual(expect.arrayContaining(['enrolled', 'decision', 'action']));
      expect(transcript).toContain(`draft ${o.actionId} approved`);
      expect(transcript).toMatch(/\[demo\] outreach +mailbox [0-9a-f-]{36} .* connected/);
      expect(o.emailSent).toBe(true);
      expect(transcript).toMatch(/\[demo\] outreach +email to \S+ accepted by the sandbox's Nylas; action [0-9a-f-]{36} executed/);
      // The reply interrupts; the opt-out reply ends the enrollment and suppresses the address.
      expect(transcript).toMatch(/Dana replied by email .* the reply interrupts enrollment/);
      expect(o.optedOut).toBe(true);
      expect(o.enrollment).toMatchObject({ status: 'ended', ended_reason: 'opted_out' });
    });

    it('outreach: leaves a second person’s draft pending in the review queue, for the operator console', async () => {
      const p = demo.outreach!.pending!;
      expect(p.actionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(p.enrollmentId).not.toBe(demo.outreach!.enrollmentId);
      expect(transcript).toMatch(new RegExp(`\\[demo\\] outreach +draft ${p.actionId} for \\S+ is pending in the review queue`));
      expect(transcript).not.toContain(`draft ${p.actionId} approved`);
      // That draft waits in the queue, the only one of its enrollment.
      const queue = await ga.get('/agentic/outreach/actions?limit=200');
      expect(queue.status).toBe(200);
      const items = (queue.body.items as Array<{ id: string; enrollment_id: string; status: string }>).map((i) => ({ id: i.id, enrollment_id: i.enrollment_id, status: i.status }));
      expect(items.filter((i) => i.enrollment_id === p.enrollmentId)).toEqual([{ id: p.actionId, enrollment_id: p.enrollmentId, status: 'pending_approval' }]);
    });
  });

  describe('follow-up routes and their documented errors (seed 002)', () => {
    let flowId: string;
    let enrollment: Record<string, unknown> & { id: string };

    beforeAll(async () => {
      const ctx = ctxOf(a, ga);
      flowId = await activeFlow(ctx, { ...twoTextsFlowBody(), name: 'Rotas' }, 'routes');
      const who = await contactWrites(ctx, '5511987651001', 'Olá, rotas');
      enrollment = (await ga.post('/ai/followups/enrollments', { customer_id: a.organizationId, flow_id: flowId, contact_id: who.contactId, conversation_id: who.conversationId, operation_key: 'routes-1' })).body.data;
    }, 120_000);

    const org = () => a.organizationId;

    it('answers every route with the documented success status', async () => {
      const flow = (await ga.get(`/ai/followup-flows/${flowId}?customer_id=${org()}`)).body.data;
      const answers = {
        list: (await ga.get(`/ai/followup-flows?customer_id=${org()}`)).status,
        models: (await ga.get(`/ai/followup-flows/from-model?customer_id=${org()}`)).status,
        fromModel: (await ga.post('/ai/followup-flows/from-model', { customer_id: org(), model_id: 'resume_after_no_reply' })).status,
        get: (await ga.get(`/ai/followup-flows/${flowId}?customer_id=${org()}`)).status,
        versions: (await ga.get(`/ai/followup-flows/${flowId}/versions?customer_id=${org()}`)).status,
        put: (await ga.put(`/ai/followup-flows/${flowId}`, { ...twoTextsFlowBody(), name: 'Rotas v2', customer_id: org(), expected_revision: flow.revision })).status,
        enrollments: (await ga.get(`/ai/followups/enrollments?customer_id=${org()}`)).status,
        enrollment: (await ga.get(`/ai/followups/enrollments/${enrollment.id}?customer_id=${org()}`)).status,
        queue: (await ga.get(`/ai/followups/queue?customer_id=${org()}`)).status,
        settings: (await ga.get(`/ai/followups/settings?customer_id=${org()}`)).status,
      };
      expect(answers).toEqual({ list: 200, models: 200, fromModel: 201, get: 200, versions: 200, put: 200, enrollments: 200, enrollment: 200, queue: 200, settings: 200 });
      const again = await ga.post('/ai/followups/enrollments', { customer_id: org(), flow_id: flowId, contact_id: enrollment.contact_id, conversation_id: enrollment.conversation_id, operation_key: 'routes-1' });
      expect(again.body.data.id).toBe(enrollment.id);
    });

    it.each(
      (
        [
          ['no API key', 'GET', '/ai/followup-flows?customer_id=ORG', undefined, 401, 'unauthorized'],
          ['customer_id missing', 'GET', '/ai/followup-flows', undefined, 400, 'validation_failed'],
          ['customer_id of another organization', 'GET', '/ai/followup-flows?customer_id=22222222-2222-4222-8222-222222222222', undefined, 404, 'not_found'],
          ['flow id not a UUID', 'GET', '/ai/followup-flows/abc?customer_id=ORG', undefined, 400, 'validation_failed'],
          ['unknown flow', 'GET', `/ai/followup-flows/${UNKNOWN}?customer_id=ORG`, undefined, 404, 'not_found'],
          ['flow without a name', 'POST', '/ai/followup-flows', { customer_id: 'ORG', name: '' }, 400, 'validation_failed'],
          ['unknown flow model', 'POST', '/ai/followup-flows/from-model', { customer_id: 'ORG', model_id: 'nope' }, 404, 'not_found'],
          ['stale flow revision on PATCH', 'PATCH', '/ai/followup-flows/FLOW', { customer_id: 'ORG', expected_revision: 999, status: 'paused' }, 409, 'revision_conflict'],
          ['stale flow revision on publish', 'POST', '/ai/followup-flows/FLOW/publish', { customer_id: 'ORG', expected_revision: 999 }, 409, 'revision_conflict'],
          ['stale flow revision on rollback', 'POST', '/ai/followup-flows/FLOW/rollback', { customer_id: 'ORG', expected_revision: 999, version_id: UNKNOWN }, 409, 'revision_conflict'],
          ['rollback to an unknown version', 'POST', '/ai/followup-flows/FLOW/rollback', { customer_id: 'ORG', expected_revision: 'REV', version_id: UNKNOWN }, 404, 'not_found'],
          ['enrollment into an unknown flow', 'POST', '/ai/followups/enrollments', { customer_id: 'ORG', flow_id: UNKNOWN, contact_id: UNKNOWN, operation_key: 'x' }, 404, 'not_found'],
          ['enrollment without operation_key', 'POST', '/ai/followups/enrollments', { customer_id: 'ORG', flow_id: UNKNOWN, contact_id: UNKNOWN }, 400, 'validation_failed'],
          ['unknown enrollment', 'GET', `/ai/followups/enrollments/${UNKNOWN}?customer_id=ORG`, undefined, 404, 'not_found'],
          ['control of an unknown enrollment', 'POST', `/ai/followups/enrollments/${UNKNOWN}/control`, { customer_id: 'ORG', expected_revision: 1, action: 'pause' }, 404, 'not_found'],
          ['unknown control action', 'POST', '/ai/followups/enrollments/ENROLLMENT/control', { customer_id: 'ORG', expected_revision: 1, action: 'explode' }, 400, 'validation_failed'],
          ['stale enrollment revision', 'POST', '/ai/followups/enrollments/ENROLLMENT/control', { customer_id: 'ORG', expected_revision: 999, action: 'pause' }, 409, 'revision_conflict'],
          ['bad enrollments cursor', 'GET', '/ai/followups/enrollments?customer_id=ORG&cursor=zzz', undefined, 422, 'invalid_cursor'],
          ['bad queue cursor', 'GET', '/ai/followups/queue?customer_id=ORG&cursor=zzz', undefined, 422, 'invalid_cursor'],
          ['stale settings revision', 'PUT', '/ai/followups/settings', { customer_id: 'ORG', expected_revision: 999 }, 409, 'revision_conflict'],
        ] as Array<[string, string, string, unknown, number, string]>
      ).map(([what, ...rest]) => [`${what} → ${rest[3]} ${rest[4]}`, ...rest] as const),
    )('%s', async (_what, method, route, body, status, code) => {
      const revision = (await ga.get(`/ai/followup-flows/${flowId}?customer_id=${org()}`)).body.data.revision;
      const fill = (s: string) => s.replace('ORG', org()).replace('FLOW', flowId).replace('ENROLLMENT', enrollment.id).replace('"REV"', String(revision));
      const json = body === undefined ? undefined : JSON.parse(fill(JSON.stringify(body)));
      const client = status === 401 ? ga.as('tp_not_a_key') : ga;
      const answer = await client.request(method, fill(route), json);
      expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
    });

    it('publishing a graph that does not validate → 422 invalid_graph; controlling a finished enrollment → 409 already_terminal', async () => {
      const bad = await ga.post('/ai/followup-flows', { customer_id: org(), name: 'Sem fim', graph: { nodes: [{ id: 't', type: 'trigger', config: {} }], edges: [] }, settings: (twoTextsFlowBody() as { settings: object }).settings });
      expect(bad.status).toBe(201);
      const published = await ga.post(`/ai/followup-flows/${bad.body.data.id}/publish`, { customer_id: org(), expected_revision: bad.body.data.revision });
      expect({ status: published.status, code: published.body.error?.code }).toEqual({ status: 422, code: 'invalid_graph' });

      // While its first text is on the wire the enrollment answers 409 dispatch_busy (documented); then it can be cancelled.
      const cancelled = await soon(async () => {
        const current = (await getEnrollment(ctxOf(a, ga), enrollment.id)).enrollment;
        const answer = await ga.post(`/ai/followups/enrollments/${enrollment.id}/control`, { customer_id: org(), expected_revision: current.revision, action: 'cancel' });
        if (answer.status === 409) expect(answer.body.error.code).toBe('dispatch_busy');
        return answer.status === 200 ? answer : undefined;
      });
      expect(cancelled.body.data).toMatchObject({ status: 'cancelled' });
      const again = await ga.post(`/ai/followups/enrollments/${enrollment.id}/control`, { customer_id: org(), expected_revision: cancelled.body.data.revision, action: 'pause' });
      expect({ status: again.status, code: again.body.error?.code }).toEqual({ status: 409, code: 'already_terminal' });
    });
  });

  describe('tenancy: another organization sees nothing of A', () => {
    it('answers 404 on every route family for A’s ids, and the body names none of A’s data', async () => {
      const s = demo.seedFlow!;
      const o = demo.outreach!;
      const senders = (await ga.get('/senders')).body.items as Array<{ id: string }>;
      const keys = await ga.get('/api-keys');
      const attempts: Array<[string, string, unknown?]> = [
        ['GET', `/ai/followup-flows?customer_id=${a.organizationId}`],
        ['GET', `/ai/followup-flows/${s.flowId}?customer_id=${b.organizationId}`],
        ['GET', `/ai/followup-flows/${s.flowId}/versions?customer_id=${b.organizationId}`],
        ['PATCH', `/ai/followup-flows/${s.flowId}`, { customer_id: b.organizationId, expected_revision: 3, status: 'paused' }],
        ['POST', `/ai/followup-flows/${s.flowId}/publish`, { customer_id: b.organizationId, expected_revision: 3 }],
        ['GET', `/ai/followups/enrollments/${s.enrollmentId}?customer_id=${b.organizationId}`],
        ['POST', `/ai/followups/enrollments/${s.enrollmentId}/control`, { customer_id: b.organizationId, expected_revision: 1, action: 'pause' }],
        ['POST', '/ai/followups/enrollments', { customer_id: b.organizationId, flow_id: s.flowId, contact_id: s.contact.contactId, operation_key: 'steal' }],
        ['GET', `/ai/followups/enrollments?customer_id=${a.organizationId}`],
        ['GET', `/ai/followups/queue?customer_id=${a.organizationId}`],
        ['GET', `/ai/followups/settings?customer_id=${a.organizationId}`],
        ['GET', `/contacts/${s.contact.contactId}`],
        ['PATCH', `/contacts/${s.contact.contactId}`, { name: 'Mallory' }],
        ['POST', `/contacts/${s.contact.contactId}/tags`, { tags: ['x'] }],
        ['GET', `/contacts/${s.contact.contactId}/notification-preferences`],
        ['GET', `/conversations/${s.contact.conversationId}`],
        ['GET', `/conversations/${s.contact.conversationId}/messages`],
        ['POST', `/conversations/${s.contact.conversationId}/messages`, { idempotency_key: 'steal', text: 'oi' }],
        ['POST', `/conversations/${s.contact.conversationId}/resolve`, {}],
        ['GET', `/senders/${senders[0].id}`],
        ['PATCH', `/senders/${senders[0].id}`, { label: 'stolen' }],
        ['DELETE', `/senders/${senders[0].id}`],
        ['GET', `/organizations/${a.organizationId}`],
        ['DELETE', `/api-keys/${a.apiKeyId}`],
        ['GET', `/agentic/outreach/campaigns/${o.campaignId}`],
        ['POST', `/agentic/outreach/campaigns/${o.campaignId}/pause`, {}],
        ['POST', `/agentic/outreach/campaigns/${o.campaignId}/enrollments`, { person_kind: 'crm', person_id: o.contactId }],
        ['POST', `/agentic/outreach/campaigns/${o.campaignId}/archive`, {}],
        ['DELETE', `/agentic/outreach/campaigns/${o.campaignId}`],
        ['GET', `/agentic/outreach/enrollments/${o.enrollmentId}`],
        ['GET', `/agentic/outreach/enrollments/${o.enrollmentId}/timeline`],
        ['POST', `/agentic/outreach/enrollments/${o.enrollmentId}/exit`, {}],
        ['POST', `/agentic/outreach/enrollments/${o.enrollmentId}/manual-retry`, {}],
        ['POST', `/agentic/outreach/actions/${o.actionId}/approve`, {}],
        ['POST', `/agentic/outreach/actions/${o.actionId}/reject`, { then: 'stop' }],
        ['DELETE', `/contacts/${s.contact.contactId}/tags/vip`],
        ['PUT', `/contacts/${s.contact.contactId}/notification-preferences/whatsapp`, { enabled: false }],
        ['POST', `/contacts/${s.contact.contactId}/erase`, {}],
      ];
      const leaks: string[] = [a.organizationId, s.contact.contactId, s.contact.conversationId, s.flowId, 'Retomada', 'Ana Souza', s.contact.waId];
      const seen = [];
      for (const [method, route, body] of attempts) {
        const answer = await gb.request(method, route, body);
        const text = JSON.stringify(answer.body ?? '');
        seen.push({ route: `${method} ${route.replace(/\?.*/, '')}`, status: answer.status, leaked: leaks.filter((l) => text.includes(l) && !route.includes(l)) });
      }
      expect(seen.filter((x) => x.status !== 404 || x.leaked.length)).toEqual([]);
      // Listing the enrollments of another organization's campaign is a 404 like every other route.
      const campaignEnrollments = await gb.get(`/agentic/outreach/campaigns/${o.campaignId}/enrollments`);
      expect(campaignEnrollments).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
      // Nothing changed on A's side.
      expect((await ga.get(`/contacts/${s.contact.contactId}`)).body.name).toBe('Ana Souza');
      expect((await ga.get(`/senders/${senders[0].id}`)).body).toMatchObject({ status: 'connected' });
      expect(keys.status).toBe(200);
      expect((await ga.get('/me')).status).toBe(200);
      // Lists of B hold none of A's rows.
      const lists = await Promise.all(['/contacts', '/conversations', '/senders', `/ai/followup-flows?customer_id=${b.organizationId}`, '/agentic/outreach/campaigns'].map((r) => gb.get(r)));
      for (const list of lists) {
        expect(list.status).toBe(200);
        for (const l of leaks) expect(JSON.stringify(list.body)).not.toContain(l);
      }
    });
  });

  /** Contacts `waIds` write in; one active one-text flow enrolls them all; answers the enrollment ids. */
  async function enrollMany(prefix: string, waIds: string[], text: string): Promise<string[]> {
    const ctx = ctxOf(a, ga);
    const flowId = await activeFlow(ctx, oneTextFlow(text), prefix);
    const people = [];
    for (const waId of waIds) people.push(await contactWrites(ctx, waId, `${prefix}: oi`));
    const ids: string[] = [];
    for (const who of people) {
      const answer = await ga.post('/ai/followups/enrollments', { customer_id: a.organizationId, flow_id: flowId, contact_id: who.contactId, conversation_id: who.conversationId, operation_key: `${prefix}:${who.waId}` });
      expect(answer.status).toBe(201);
      ids.push(answer.body.data.id);
    }
    return ids;
  }

  /** Every enrollment completed with exactly one sent effect, and the sandbox got exactly one text per contact. */
  async function expectEachSentOnce(ids: string[], waIds: string[], text: string): Promise<void> {
    const ctx = ctxOf(a, ga);
    await soon(async () => {
      const views = await Promise.all(ids.map((id) => getEnrollment(ctx, id)));
      return views.every((v) => v.enrollment.status === 'completed' && v.effects.filter((e) => e.kind === 'send').every((e) => e.status === 'sent'));
    }, 90_000);
    for (const id of ids) {
      const view = await getEnrollment(ctx, id);
      expect(view.effects.filter((e) => e.kind === 'send').map((e) => e.status)).toEqual(['sent']);
    }
    const calls = (await sandbox.received('meta')).filter((c) => (c.body as MetaText | undefined)?.text?.body === text);
    expect(calls.map((c) => c.context.wa_id).sort()).toEqual([...waIds].sort());
  }

  /** Enrollments whose text has not been reported sent yet: the work a fault lands on. */
  async function unsent(ids: string[]): Promise<number> {
    const views = await Promise.all(ids.map((id) => getEnrollment(ctxOf(a, ga), id)));
    return views.filter((v) => !v.effects.some((e) => e.kind === 'send' && e.status === 'sent')).length;
  }

  describe('faults', () => {
    it('an ambiguous WhatsApp send (the provider took it, the answer never came) is never resent and is settled by a later status webhook', async () => {
      const ctx = ctxOf(a, ga);
      const waId = '5511987653001';
      const who = await contactWrites(ctx, waId, 'Manda o boleto?');
      await sandbox.request('POST', '/sandbox/meta/settings', { status_webhooks: false });
      try {
        await sandbox.request('POST', '/sandbox/control/meta/faults', { kind: 'timeout', hold_ms: 6000, deliver: true, match: { wa_id: waId, type: 'text' } });
        const sent = await ga.post(`/conversations/${who.conversationId}/messages`, { idempotency_key: 'boleto-1', text: 'Segue o boleto.' });
        expect(sent.status).toBeLessThan(300);
        const ambiguous = await soon(async () => {
          const list = await platform.cli.run<{ items: Array<{ id: string; status: string; organization_id?: string }> }>(['outbox:ambiguous:list', '--org', a.organizationId]);
          return list.items[0];
        }, 60_000);
        expect(ambiguous.status).toBe('ambiguous');
        const [call] = (await sandbox.received('meta')).filter((c) => c.context.wa_id === waId && c.context.type === 'text');
        expect(call).toMatchObject({ outcome: 'timeout', provider_id: expect.stringMatching(/^wamid\./) });

        const webhook = await sandbox.request('POST', '/sandbox/meta/status', { biz_opaque_callback_data: call.context.biz_opaque_callback_data, status: 'delivered' });
        expect(webhook.body.status).toBe(200);
        await soon(async () => (await platform.cli.run<{ items: unknown[] }>(['outbox:ambiguous:list', '--org', a.organizationId])).items.length === 0);
        const message = await soon(async () => (await conversationMessages(ctx, who.conversationId)).find((m) => m.direction === 'outbound' && m.body === 'Segue o boleto.' && m.status === 'delivered'));
        expect(message.external_id).toBe(call.provider_id);
        // A retried request with the same key sends nothing more.
        await ga.post(`/conversations/${who.conversationId}/messages`, { idempotency_key: 'boleto-1', text: 'Segue o boleto.' });
        await new Promise((resolve) => setTimeout(resolve, 2000));
        expect((await sandbox.received('meta')).filter((c) => c.context.wa_id === waId && c.context.type === 'text')).toHaveLength(1);
      } finally {
        await sandbox.request('POST', '/sandbox/meta/settings', { status_webhooks: true });
        await sandbox.request('DELETE', '/sandbox/control/meta/faults');
      }
    }, 120_000);

    it('followups SIGKILLed in the middle of a release and restarted: nothing lost, nothing sent twice', async () => {
      const waIds = Array.from({ length: 6 }, (_, i) => `551198765400${i}`);
      const text = 'Lembrete: sua consulta é amanhã.';
      const ids = await enrollMany('kill', waIds, text);
      // The texts wait in the outbox behind the read receipts' 6.5 s pacing: the kill lands on work in flight.
      expect(await unsent(ids)).toBeGreaterThan(0);
      await platform.killFollowups('SIGKILL');
      await platform.startFollowups();
      await expectEachSentOnce(ids, waIds, text);
    }, 180_000);

    it('every broker connection of the platform cut while work is in flight, then back: nothing lost, nothing sent twice', async () => {
      const waIds = Array.from({ length: 6 }, (_, i) => `551198765500${i}`);
      const text = 'Sua proposta vence hoje.';
      const ids = await enrollMany('broker', waIds, text);
      expect(platform.broker.openConnections).toBeGreaterThan(0);
      expect(await unsent(ids)).toBeGreaterThan(0);
      platform.broker.cut();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      platform.broker.restore();
      await expectEachSentOnce(ids, waIds, text);
      // The platform is whole again: every service ready.
      for (const name of STARTED_PROCESSES) await soon(async () => (await fetch(`${platform.url(name)}/health/ready`)).status === 200);
    }, 180_000);
  });

  describe('health and operations', () => {
    it('every service answers its probes and exposes the counters the specs name on /metrics', async () => {
      const metrics: Record<string, string> = {};
      for (const name of STARTED_PROCESSES) {
        expect({ name, live: (await fetch(`${platform.url(name)}/health/live`)).status }).toEqual({ name, live: 200 });
        expect({ name, ready: (await fetch(`${platform.url(name)}/health/ready`)).status }).toEqual({ name, ready: 200 });
        if (name === 'sandbox') continue;
        const answer = await fetch(`${platform.url(name)}/metrics`);
        expect({ name, status: answer.status }).toEqual({ name, status: 200 });
        metrics[name] = await answer.text();
        // DESIGN §8: the bus counters everywhere.
        for (const counter of ['touchpoint_bus_published_total', 'touchpoint_bus_consumed_total', 'touchpoint_bus_dead_lettered_total']) expect({ name, counter, present: metrics[name].includes(`# TYPE ${counter} counter`) }).toEqual({ name, counter, present: true });
      }
      // Seed 000 "Metrics", under our prefix.
      for (const counter of ['touchpoint_followup_steps_total', 'touchpoint_followup_enrollments_total', 'touchpoint_followup_finished_total', 'touchpoint_followup_triggers_total']) expect(metrics.followups).toContain(`# TYPE ${counter} counter`);
      expect(metrics.followups).toContain('# TYPE touchpoint_followup_release_lag_seconds histogram');
      expect(metrics['ai-gateway']).toContain('# TYPE touchpoint_ai_requests_total counter');
      // The work above was counted.
      expect(metrics.followups).toMatch(/touchpoint_followup_steps_total\{[^}]*\} [1-9]/);
    });

    it('every Deployment in k8s/ points its probes and scrape annotation at routes that answer on the started service', async () => {
      const checked: Array<{ service: string; path: string; status: number }> = [];
      for (const file of readdirSync(path.join(REPO, 'k8s')).filter((f) => f.endsWith('.yaml'))) {
        for (const doc of loadAll(readFileSync(path.join(REPO, 'k8s', file), 'utf8')) as Array<K8sDocument | null>) {
          if (doc?.kind !== 'Deployment') continue;
          const service = String(doc.metadata.name).replace(/^touchpoint-/, '') as (typeof STARTED_PROCESSES)[number];
          const template = doc.spec.template;
          const paths = new Set<string>();
          for (const container of template.spec.containers) {
            for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) if (container[probe]?.httpGet?.path) paths.add(container[probe].httpGet.path);
          }
          const scrape = template.metadata?.annotations?.['prometheus.io/path'];
          if (scrape) paths.add(scrape);
          for (const route of paths) checked.push({ service, path: route, status: (await fetch(`${platform.url(service)}${route}`)).status });
        }
      }
      expect(new Set(checked.map((c) => c.service))).toEqual(new Set(STARTED_PROCESSES.filter((n) => n !== 'sandbox')));
      expect(checked.filter((c) => c.status !== 200)).toEqual([]);
    });

    it('runs each admin CLI command against the started platform', async () => {
      const migrated = await platform.cli.run<{ migrated: Record<string, string[]> }>(['migrate']);
      expect(Object.values(migrated.migrated).every((list) => list.length === 0)).toBe(true);
      const spare = await platform.cli.run<{ id: string; secret: string }>(['apikey:create', '--org', b.organizationId, '--member', b.memberId, '--scopes', 'agents:read', '--name', 'spare']);
      expect((await gb.as(spare.secret).get('/me')).status).toBe(200);
      await platform.cli.run(['apikey:revoke', '--id', spare.id]);
      expect((await gb.as(spare.secret).get('/me')).status).toBe(401);
      for (const service of ['followups', 'messaging', 'outbox-dispatcher']) {
        const listed = await platform.cli.run<{ items?: unknown[]; messages?: unknown[] }>(['dlq:list', '--service', service]);
        expect(listed).toBeInstanceOf(Object);
        const replayed = await platform.cli.run<Record<string, unknown>>(['dlq:replay', '--service', service]);
        expect(replayed).toBeInstanceOf(Object);
      }
      const ambiguous = await platform.cli.run<{ items: unknown[] }>(['outbox:ambiguous:list']);
      expect(ambiguous.items).toEqual([]);
      await expect(platform.cli.run(['outbox:ambiguous:resolve', '--id', UNKNOWN, '--status', 'accepted', '--note', 'nothing'])).rejects.toThrow(/not_found|not_ambiguous|no such/i);
      const drafts = await platform.cli.run<{ items: unknown[] }>(['outreach:drafts:list', '--org', a.organizationId]);
      expect(Array.isArray(drafts.items)).toBe(true);
    }, 120_000);
  });
});
