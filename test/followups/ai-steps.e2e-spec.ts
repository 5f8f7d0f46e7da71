import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { AiGatewayConfig } from '../../apps/ai-gateway/src/ai-gateway.config.js';
import { AiGatewayModule } from '../../apps/ai-gateway/src/ai-gateway.module.js';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { PromiseFiringService } from '../../apps/followups/src/promises/promise-firing.service.js';
import { PromisesService } from '../../apps/followups/src/promises/promises.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import type { ModelScriptStep, ReceivedModelRequest } from '../../apps/sandbox/src/model/model-state.service.js';
import { startSandbox } from '../../apps/sandbox/src/sandbox.app.js';
import { SandboxConfig } from '../../apps/sandbox/src/sandbox.config.js';
import { loadConfig } from '@touchpoint/config';
import { type FlowGraph, type FlowSettings, MessagingEvents, OutboxEvents, PlatformRpc } from '@touchpoint/contracts';
import { Metrics } from '@touchpoint/observability';
import { RpcClient } from '@touchpoint/runtime';
import { ALWAYS_OPEN, createTestWorld, eventually, HOUR, publishEvent, type TestWorld, aMessageReceived } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
/** A `messaging.send` command as written to the outbox. */
type SendCommand = { payload: { data: { text?: string } & Record<string, unknown> } };

/** Lease of the AI steps in this world, ms (small, so a test can let it run out). */
const LEASE_MS = 5000;

/**
 * AI steps (seed 000 "AI step", "Failure behaviour") through the real ai-gateway and the sandbox
 * model: the classification takes its branch, low confidence and model failure take the fallback,
 * an AI-written action sends the model's text, and a worker whose model call outlives its lease
 * loses the step to another worker with a new fence — its late answer is dropped.
 */
describe('Follow-up AI steps', () => {
  let world: TestWorld;
  let sandbox: NestFastifyApplication;
  let sandboxUrl: string;
  let followupsA: NestFastifyApplication;
  let followupsB: NestFastifyApplication;
  let workerA: ReleaseService;
  let workerB: ReleaseService;
  let flows: FlowsService;
  let enrollments: EnrollmentsService;
  let schema: string;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));
  const org = randomUUID();
  const sender = randomUUID();

  beforeAll(async () => {
    world = await createTestWorld('fu_ai');
    sandbox = await startSandbox(loadConfig(SandboxConfig, { PORT: '0', LOG_LEVEL: 'silent' }));
    sandboxUrl = (await sandbox.getUrl()).replace('[::1]', '127.0.0.1');
    await world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig, { AI_BASE_URL: `${sandboxUrl}/v1` })));
    // Two followups processes: two workers that can take the same step over from each other.
    const env = { FOLLOWUP_AI_LEASE_MS: String(LEASE_MS) };
    const a = await startFollowups(world, { clock, env });
    const b = await startFollowups(world, { clock, env });
    followupsA = a;
    followupsB = b;
    workerA = a.get(ReleaseService);
    workerB = b.get(ReleaseService);
    flows = a.get(FlowsService);
    enrollments = a.get(EnrollmentsService);
    schema = world.schema('followups');
    await eventually(() => a.get(RpcClient).call('ai-gateway', PlatformRpc.Ping, {}, 2000), 20_000, 200);
    await a.get(SettingsService).update({ organization_id: org, expected_revision: 0, approved_templates: [{ name: 'retomada_conversa', language: 'pt_BR', parameter_count: 0 }] });
    await publishEvent(world, OutboxEvents.SenderConnected, org, { sender_id: sender, channel: 'whatsapp', is_default: true, status: 'connected' });
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema}".senders WHERE sender_id = $1`, [sender])).length === 1);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(() => model('POST', 'reset', {}));
  afterEach(() => world.sql(`UPDATE "${world.schema('followups')}".enrollments SET status = 'cancelled', next_run_at = NULL WHERE status <> 'cancelled'`));

  async function model(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${sandboxUrl}/sandbox/model/${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
    if (!res.ok) throw new Error(`sandbox model ${path}: ${res.status}`);
    return res.json() as Promise<Record<string, unknown>>;
  }
  const script = (steps: ModelScriptStep[]) => model('POST', 'script', { steps });
  const requests = async () => (await model('GET', 'requests')).requests as ReceivedModelRequest[];

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const enrollment = async (id: string) => (await sql<Row & { locked_until: Date; next_run_at: Date }>(`SELECT * FROM fu.enrollments WHERE id = $1`, [id]))[0];
  const effectsOf = (id: string, kind: string) => sql(`SELECT * FROM fu.effects WHERE enrollment_id = $1 AND kind = $2 ORDER BY created_at`, [id, kind]);
  const sendCommands = (id: string) => sql<SendCommand>(`SELECT payload FROM fu.outbox_events WHERE type = 'messaging.send' AND event_id LIKE $1`, [`followup:${id}:%`]);

  /** trigger → wait for a reply → classify (interested | not_interested, fallback not_interested) → a text per class → end. */
  const classifyFlow = (): [FlowGraph, FlowSettings] => [
    {
      nodes: [
        { id: 't', type: 'trigger', config: {} },
        { id: 'w', type: 'wait', config: { mode: 'reply', timeout_ms: HOUR } },
        {
          id: 'c',
          type: 'ai_classify',
          config: {
            classes: [
              { id: 'interested', label: 'Interessado', description: 'wants to buy or asks about price' },
              { id: 'not_interested', label: 'Sem interesse', description: 'declines' },
            ],
            fallback_class_id: 'not_interested',
            min_confidence: 0.6,
          },
        },
        { id: 'yes', type: 'action', config: { mode: 'text', body: 'Ótimo! Vou te mandar a proposta.' } },
        { id: 'no', type: 'action', config: { mode: 'text', body: 'Tudo bem, obrigado!' } },
        { id: 'e', type: 'end', config: {} },
      ],
      edges: [
        { id: 'e1', source: 't', target: 'w', condition: { type: 'always' } },
        { id: 'e2', source: 'w', target: 'c', condition: { type: 'branch', branch_id: 'replied' } },
        { id: 'e3', source: 'w', target: 'e', condition: { type: 'branch', branch_id: 'timeout' } },
        { id: 'e4', source: 'c', target: 'yes', condition: { type: 'class_match', class_id: 'interested' } },
        { id: 'e5', source: 'c', target: 'no', condition: { type: 'class_match', class_id: 'not_interested' } },
        { id: 'e6', source: 'yes', target: 'e', condition: { type: 'always' } },
        { id: 'e7', source: 'no', target: 'e', condition: { type: 'always' } },
      ],
    },
    { trigger: { kind: 'manual', cancel_on_reply: false }, handoff_policy: 'continue', ...ALWAYS_OPEN },
  ];

  async function activeFlow(graph: FlowGraph, settings: FlowSettings): Promise<string> {
    const flow = await flows.create({ organization_id: org, name: `ai ${randomUUID().slice(0, 6)}`, graph, settings });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
    return flow.id;
  }

  const inbound = (contactId: string, text: string, at: Date) => publishEvent(world, MessagingEvents.MessageReceived, org, aMessageReceived(contactId, { external_id: `wamid.${randomUUID()}`, text }), at);

  /** An enrollment in the classify flow whose contact has just replied `text` (the wait took its replied exit). */
  async function replied(text: string): Promise<string> {
    const contactId = randomUUID();
    await inbound(contactId, 'oi', new Date(clock.now().getTime() - HOUR));
    await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);
    const { enrollment: e } = await enrollments.create({ organization_id: org, flow_id: await activeFlow(...classifyFlow()), contact_id: contactId, operation_key: randomUUID() });
    expect(e.status).toBe('waiting_reply');
    clock.advance(60_000);
    await inbound(contactId, text, clock.now());
    await eventually(async () => (await enrollment(e.id)).pending_exit === 'branch:replied');
    return e.id;
  }

  it('classifies the reply through ai-gateway (second pass under the lock) and takes that branch', async () => {
    const id = await replied('Quanto custa a cadeira?');
    await script([{ reply: { class: 'interested', confidence: 0.92 } }]);
    expect(await workerA.releaseOne()).toBe('released');
    const [classification] = await effectsOf(id, 'classification');
    expect(classification).toMatchObject({ node_id: 'c', status: 'done', text: 'interested', reason: null });
    expect(classification.usage).toMatchObject({ total_tokens: expect.any(Number) });
    const [send] = await effectsOf(id, 'send');
    expect(send).toMatchObject({ node_id: 'yes', status: 'queued', text: 'Ótimo! Vou te mandar a proposta.' });
    expect(await enrollment(id)).toMatchObject({ status: 'completed', ai_attempts: 1, locked_until: null });
    const [request] = await requests();
    expect(request.task).toBe('followup_classify');
  });

  it('low confidence and a failing model take the fallback class', async () => {
    const low = await replied('hmm, talvez');
    await script([{ reply: { class: 'interested', confidence: 0.3 } }]);
    expect(await workerA.releaseOne()).toBe('released');
    expect((await effectsOf(low, 'classification'))[0]).toMatchObject({ text: 'not_interested', reason: 'fallback:low_confidence' });
    expect((await effectsOf(low, 'send'))[0]).toMatchObject({ node_id: 'no' });

    const failing = await replied('Quero comprar');
    await script([{ fault: 'http_error', status: 500, times: 5 }]);
    expect(await workerA.releaseOne()).toBe('released');
    const [classification] = await effectsOf(failing, 'classification');
    expect(classification.text).toBe('not_interested');
    expect(classification.reason).toMatch(/^fallback:(unavailable|timeout|invalid_output)$/);
  });

  it('an AI-written action sends the model text; with the model down it sends the template fallback', async () => {
    const graph: FlowGraph = {
      nodes: [
        { id: 't', type: 'trigger', config: {} },
        { id: 'ai', type: 'action', config: { mode: 'ai', instructions: 'Retome a conversa sobre a proposta', template_fallback: { name: 'retomada_conversa', language: 'pt_BR' } } },
        { id: 'e', type: 'end', config: {} },
      ],
      edges: [
        { id: 'e1', source: 't', target: 'ai', condition: { type: 'always' } },
        { id: 'e2', source: 'ai', target: 'e', condition: { type: 'always' } },
      ],
    };
    const settings: FlowSettings = { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN };
    const flowId = await activeFlow(graph, settings);
    const enrollWriter = async () => {
      const contactId = randomUUID();
      await inbound(contactId, 'oi', new Date(clock.now().getTime() - HOUR));
      await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);
      return (await enrollments.create({ organization_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID() })).enrollment.id;
    };
    const written = await enrollWriter();
    await script([{ reply: { body: 'Oi! Conseguiu olhar a proposta da cadeira?' } }]);
    expect(await workerA.releaseOne()).toBe('released');
    expect((await effectsOf(written, 'send'))[0]).toMatchObject({ status: 'queued', text: 'Oi! Conseguiu olhar a proposta da cadeira?', template: null });
    expect((await sendCommands(written))[0].payload.data.text).toBe('Oi! Conseguiu olhar a proposta da cadeira?');

    const fallback = await enrollWriter();
    await script([{ fault: 'http_error', status: 503, times: 5 }]);
    expect(await workerA.releaseOne()).toBe('released');
    expect((await effectsOf(fallback, 'send'))[0]).toMatchObject({ status: 'queued', text: null, template: { name: 'retomada_conversa', language: 'pt_BR' } });
  });

  it.each([
    ['sends that answer later without asking the model again', false],
    ['asks the model again once the kept answer is more than an hour old', true],
  ])('an AI-written send deferred after the model answered (pacing) %s', async (_name, expired) => {
    // A worker that paces its sender: 1 s between two sends of one number (from a free number: the clock is reset between cases).
    await sql(`DELETE FROM fu.sender_pacing`);
    const paced = (await startFollowups(world, { clock, env: { FOLLOWUP_AI_LEASE_MS: String(LEASE_MS), FOLLOWUP_SENDER_GAP_MS: '1000' } })).get(ReleaseService);
    const graph: FlowGraph = {
      nodes: [
        { id: 't', type: 'trigger', config: {} },
        { id: 'ai', type: 'action', config: { mode: 'ai', instructions: 'Retome a conversa' } },
        { id: 'e', type: 'end', config: {} },
      ],
      edges: [
        { id: 'e1', source: 't', target: 'ai', condition: { type: 'always' } },
        { id: 'e2', source: 'ai', target: 'e', condition: { type: 'always' } },
      ],
    };
    const flowId = await activeFlow(graph, { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const contactId = randomUUID();
      await inbound(contactId, 'oi', new Date(clock.now().getTime() - HOUR));
      await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);
      ids.push((await enrollments.create({ organization_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID() })).enrollment.id);
    }
    await script([{ reply: { body: 'Texto 1' } }, { reply: { body: 'Texto 2' } }, { reply: { body: 'Texto 3' } }]);
    const start = clock.now();
    try {
      expect(await paced.releaseOne()).toBe('released');
      expect(await paced.releaseOne()).toBe('released');
      const sends = (await Promise.all(ids.map((id) => effectsOf(id, 'send')))).map((rows) => rows.map((r) => r.text));
      // One went out; the other's answer came back while the number was paced: it waits, answer kept.
      expect(sends.flat()).toHaveLength(1);
      const waiting = ids[sends.findIndex((rows) => rows.length === 0)];
      expect((await enrollment(waiting)).ai_draft).toMatchObject({ node_id: 'ai', result: { status: 'ok' } });

      // An answer kept longer than AI_DRAFT_TTL_MS no longer fits the moment: the model is asked again.
      if (expired) await sql(`UPDATE fu.enrollments SET ai_draft = jsonb_set(ai_draft, '{at}', to_jsonb($2::text)) WHERE id = $1`, [waiting, new Date(clock.now().getTime() - 2 * HOUR).toISOString()]);
      clock.advance(1000);
      expect(await paced.releaseOne()).toBe('released');
      const [late] = await effectsOf(waiting, 'send');
      expect(late).toMatchObject({ status: 'queued' });
      if (expired) expect(late.text).toBe('Texto 3');
      else {
        expect(['Texto 1', 'Texto 2']).toContain(late.text);
        expect(sends.flat()).not.toContain(late.text);
      }
      expect((await requests()).filter((r) => r.task === 'followup_message')).toHaveLength(expired ? 3 : 2);
      expect(await enrollment(waiting)).toMatchObject({ status: 'completed', ai_draft: null });
    } finally {
      clock.set(start);
    }
  });

  it('worker dies during the model call: after the lease another runs the step with a new fence, and the late answer is dropped', async () => {
    const id = await replied('Quanto custa?');
    // Worker A's call is held by the model past the lease; worker B's call is answered at once.
    await script([{ fault: 'timeout', delay_ms: LEASE_MS + 3000 }, { reply: { class: 'interested', confidence: 0.95 } }]);
    const lateA = workerA.releaseOne();
    await eventually(async () => (await requests()).length === 1);
    const leased = await enrollment(id);
    expect(leased).toMatchObject({ ai_attempts: 1, node_id: 'c', status: 'active' });
    expect(leased.locked_until.getTime()).toBe(clock.now().getTime() + LEASE_MS);
    expect(leased.next_run_at.getTime()).toBe(leased.locked_until.getTime());
    // No lock is held during the call: the row is free, but nobody claims it before the lease ends.
    expect(await workerB.releaseOne()).toBe('idle');

    clock.advance(LEASE_MS + 1);
    expect(await workerB.releaseOne()).toBe('released');
    expect(await enrollment(id)).toMatchObject({ ai_attempts: 2, status: 'completed' });
    expect(await effectsOf(id, 'classification')).toEqual([expect.objectContaining({ text: 'interested' })]);

    // A's answer arrives after its fence moved on: dropped, nothing written twice.
    expect(await lateA).toBe('dropped');
    expect(await effectsOf(id, 'classification')).toHaveLength(1);
    expect(await effectsOf(id, 'send')).toEqual([expect.objectContaining({ node_id: 'yes', status: 'queued' })]);
    expect(await sendCommands(id)).toHaveLength(1);
    const requested = await sql<{ data: { attempt: number } }>(`SELECT data FROM fu.enrollment_events WHERE enrollment_id = $1 AND type = 'ai_requested' ORDER BY id`, [id]);
    expect(requested.map((r) => r.data.attempt)).toEqual([1, 2]);
    expect((await requests()).map((r) => r.task)).toEqual(['followup_classify', 'followup_classify']);
    const counter = await followupsA.get(Metrics).registry.getSingleMetricAsString('touchpoint_followup_ai_requests_total');
    expect(counter).toContain('touchpoint_followup_ai_requests_total{kind="followup_classify",status="late_dropped",service="followups"} 1');
  }, 30_000);

  describe('one-off returns due inside the 24-hour window', () => {
    async function dueReturn(): Promise<{ id: string; contactId: string }> {
      const contactId = randomUUID();
      await inbound(contactId, 'vou falar com meu sócio', new Date(clock.now().getTime() - HOUR));
      await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);
      const { promise } = await followupsA.get(PromisesService).create({
        organization_id: org,
        contact_id: contactId,
        operation_key: randomUUID(),
        reason: 'Cliente pediu retorno após falar com o sócio',
        promise: 'Retomar a proposta da cadeira ergonômica',
        promised_at: clock.now().toISOString(),
        outside_window: 'alert',
      });
      return { id: promise.id, contactId };
    }
    const promiseRow = async (id: string) => (await sql<Row & { run: { ai_run_id?: string; skip_reason?: string } }>(`SELECT * FROM fu.promises WHERE id = $1`, [id]))[0];

    it('resume the conversation with the message ai-gateway writes from the promise (promise_resume)', async () => {
      const { id, contactId } = await dueReturn();
      await script([{ reply: { body: 'Oi! Conseguiu falar com seu sócio sobre a cadeira?' } }]);
      expect(await followupsA.get(PromiseFiringService).fireOne()).toBe('resumed');
      const row = await promiseRow(id);
      expect(row).toMatchObject({ status: 'completed', attempts: 1, locked_until: null, run: { message_key: `promise:${id}`, skip_reason: null } });
      expect(row.run.ai_run_id).toEqual(expect.any(String));
      const [command] = await sql<SendCommand>(`SELECT payload FROM fu.outbox_events WHERE event_id = $1`, [`promise:${id}`]);
      expect(command.payload.data).toMatchObject({ contact_id: contactId, text: 'Oi! Conseguiu falar com seu sócio sobre a cadeira?', requester: 'followups', sender_type: 'followup' });
      const [request] = await requests();
      expect(request.task).toBe('promise_resume');
    });

    it('skip with the reason when the model fails, and drop a late answer after another worker took over', async () => {
      const failing = await dueReturn();
      await script([{ fault: 'http_error', status: 500, times: 5 }]);
      expect(await followupsA.get(PromiseFiringService).fireOne()).toBe('skipped');
      expect((await promiseRow(failing.id)).run.skip_reason).toMatch(/^ai_(unavailable|timeout|invalid_output)$/);
      expect(await sql(`SELECT 1 FROM fu.outbox_events WHERE event_id = $1`, [`promise:${failing.id}`])).toEqual([]);

      await model('POST', 'reset', {});
      const slow = await dueReturn();
      await script([{ fault: 'timeout', delay_ms: LEASE_MS + 3000 }, { reply: { body: 'Olá de novo!' } }]);
      const late = followupsA.get(PromiseFiringService).fireOne();
      await eventually(async () => (await requests()).length === 1);
      expect(await promiseRow(slow.id)).toMatchObject({ status: 'turn_enqueued', attempts: 1 });
      clock.advance(LEASE_MS + 1);
      expect(await followupsB.get(PromiseFiringService).fireOne()).toBe('resumed');
      expect(await late).toBe('dropped');
      expect(await promiseRow(slow.id)).toMatchObject({ status: 'completed', attempts: 2 });
      const commands = await sql<SendCommand>(`SELECT payload FROM fu.outbox_events WHERE event_id = $1`, [`promise:${slow.id}`]);
      expect(commands.map((c) => c.payload.data.text)).toEqual(['Olá de novo!']);
    }, 30_000);
  });
});
