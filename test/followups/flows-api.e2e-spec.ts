import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { SEED_002_FLOW_EXAMPLE } from '@touchpoint/contracts';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, gatewayTable, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, registerSender } from '../messaging/helpers.js';
import { startFollowups } from './followups-world.js';

/** The seed-002 REST contract of flows, enrollments, the queue and settings, through the gateway. */
describe('Follow-up REST API (gateway → followups)', () => {
  let world: TestWorld;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let org: SeededKey;
  let reader: SeededKey;
  let other: SeededKey;
  let messaging: NestFastifyApplication;
  let waSeq = 0;
  const SEED_ORG = SEED_002_FLOW_EXAMPLE.customer_id;

  beforeAll(async () => {
    world = await createTestWorld('fu_api');
    await startFollowups(world);
    // Enrollments name the caller's contacts and conversations, which messaging owns.
    messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '200' })));
    await registerSender(world, SEED_002_FLOW_EXAMPLE.customer_id, 'pn-fu-api');
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    // The seed's example names its organization: make that one exist, so the body goes as written.
    await world.sql(`INSERT INTO ${gatewayTable(world, 'organizations')} (id, name) VALUES ($1, 'Seed org')`, [SEED_ORG]);
    const build = gatewayBuilders(gateway);
    org = await build.organizationWithKey({ organizationId: SEED_ORG, scopes: ['agents:read', 'agents:write'] });
    reader = await build.organizationWithKey({ organizationId: SEED_ORG, scopes: ['agents:read'], email: 'reader@example.com' });
    other = await build.organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
  });
  afterAll(() => world.close());

  /** A contact of the seed organization writes in: its contact and conversation ids. */
  async function contactWrites(): Promise<{ contact_id: string; conversation_id: string }> {
    const waId = `55119${String(70_000_000 + ++waSeq)}`;
    await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, 'Oi', Math.floor(Date.now() / 1000), 'pn-fu-api'));
    const [row] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT m.contact_id, m.conversation_id FROM "${world.schema('messaging')}".messages m JOIN "${world.schema('messaging')}".contacts c ON c.id = m.contact_id WHERE c.phone = $1 LIMIT 1`, [
      `+${waId}`,
    ]);
    return row!;
  }

  const q = (params: Record<string, string | number | undefined>) =>
    '?' +
    new URLSearchParams(
      Object.entries(params)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, String(v)]),
    ).toString();

  async function createSeedFlow() {
    const res = await http('POST', '/ai/followup-flows', { secret: org.secret, json: SEED_002_FLOW_EXAMPLE });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function publishAndActivate(flowId: string, revision: number) {
    const published = await http('POST', `/ai/followup-flows/${flowId}/publish`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: revision } });
    expect(published.status).toBe(200);
    const active = await http('PATCH', `/ai/followup-flows/${flowId}`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: published.body.data.revision, status: 'active' } });
    expect(active.status).toBe(200);
    return active.body.data;
  }

  describe('flows', () => {
    it('accepts the seed example as written (201, a draft), publishes it cleanly and activates it', async () => {
      const flow = await createSeedFlow();
      expect(flow).toMatchObject({ customer_id: SEED_ORG, name: 'Retomada em 4 horas', status: 'draft', published_version_id: null, revision: 1 });
      expect(flow.graph).toEqual(SEED_002_FLOW_EXAMPLE.graph);
      expect(flow.settings).toEqual(SEED_002_FLOW_EXAMPLE.settings);
      const active = await publishAndActivate(flow.id, 1);
      expect(active).toMatchObject({ status: 'active', revision: 3 });
      expect(active.published_version_id).toMatch(/^[0-9a-f-]{36}$/);

      const listed = await http('GET', `/ai/followup-flows${q({ customer_id: SEED_ORG })}`, { secret: reader.secret });
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((f: { id: string }) => f.id)).toContain(flow.id);
    });

    it('keeps the published version when the draft is saved; versions are newest first; rollback republishes an older one', async () => {
      const flow = await createSeedFlow();
      const v1Flow = (await http('POST', `/ai/followup-flows/${flow.id}/publish`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: 1 } })).body.data;
      const changed = structuredClone(SEED_002_FLOW_EXAMPLE.graph);
      (changed.nodes[1].config as { duration_ms: number }).duration_ms = 2 * 3_600_000;
      const saved = await http('PUT', `/ai/followup-flows/${flow.id}`, { secret: org.secret, json: { ...SEED_002_FLOW_EXAMPLE, expected_revision: v1Flow.revision, graph: changed } });
      expect(saved.status).toBe(200);
      expect(saved.body.data.published_version_id).toBe(v1Flow.published_version_id);
      expect(saved.body.data.graph.nodes[1].config.duration_ms).toBe(7_200_000);

      const v2Flow = (await http('POST', `/ai/followup-flows/${flow.id}/publish`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: saved.body.data.revision } })).body.data;
      const versions = await http('GET', `/ai/followup-flows/${flow.id}/versions${q({ customer_id: SEED_ORG })}`, { secret: org.secret });
      expect(versions.body.data.map((v: { version: number }) => v.version)).toEqual([2, 1]);
      expect(versions.body.data[1].graph.nodes[1].config.duration_ms).toBe(14_400_000);

      const rolled = await http('POST', `/ai/followup-flows/${flow.id}/rollback`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: v2Flow.revision, version_id: v1Flow.published_version_id } });
      expect(rolled.status).toBe(200);
      const after = (await http('GET', `/ai/followup-flows/${flow.id}/versions${q({ customer_id: SEED_ORG })}`, { secret: org.secret })).body.data;
      expect(after.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
      expect(after[0]).toMatchObject({ source_version_id: v1Flow.published_version_id });
      expect(after[0].graph).toEqual(after[2].graph);
      expect(rolled.body.data.published_version_id).toBe(after[0].id);
      expect(rolled.body.data.graph.nodes[1].config.duration_ms).toBe(14_400_000);
    });

    it('answers 409 revision_conflict on a stale expected_revision', async () => {
      const flow = await createSeedFlow();
      const res = await http('PUT', `/ai/followup-flows/${flow.id}`, { secret: org.secret, json: { ...SEED_002_FLOW_EXAMPLE, expected_revision: 7 } });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'revision_conflict', details: { expected_revision: 7, current_revision: 1 } });
    });

    it('answers 422 publish_required when activating a flow never published', async () => {
      const flow = await createSeedFlow();
      const res = await http('PATCH', `/ai/followup-flows/${flow.id}`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: 1, status: 'active' } });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('publish_required');
    });

    it('answers 422 invalid_graph with validation_errors {node_id, code, message, branch_id}', async () => {
      const graph = structuredClone(SEED_002_FLOW_EXAMPLE.graph);
      graph.edges = graph.edges.filter((e) => e.id !== 'e3');
      (graph.nodes[1].config as { duration_ms: number }).duration_ms = 60_000;
      const created = await http('POST', '/ai/followup-flows', { secret: org.secret, json: { ...SEED_002_FLOW_EXAMPLE, graph } });
      expect(created.status).toBe(201);
      const res = await http('POST', `/ai/followup-flows/${created.body.data.id}/publish`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: 1 } });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('invalid_graph');
      const errors = res.body.error.details.validation_errors;
      expect(errors).toEqual(
        expect.arrayContaining([
          { node_id: 'espera', code: 'wait_out_of_range', message: expect.any(String), branch_id: null },
          { node_id: 'lembrete', code: 'uncovered_exit', message: expect.any(String), branch_id: null },
          { node_id: 'lembrete', code: 'no_path_to_end', message: expect.any(String), branch_id: null },
        ]),
      );
      const unchanged = await http('GET', `/ai/followup-flows/${created.body.data.id}${q({ customer_id: SEED_ORG })}`, { secret: org.secret });
      expect(unchanged.body.data).toMatchObject({ published_version_id: null, revision: 1 });
    });

    it('publishes AI steps now that they run (ai_step_unavailable only where FOLLOWUP_AI_STEPS_ENABLED is off)', async () => {
      const graph = structuredClone(SEED_002_FLOW_EXAMPLE.graph);
      graph.nodes[2].config = { mode: 'ai', instructions: 'Retome a conversa sobre a proposta' };
      const created = await http('POST', '/ai/followup-flows', { secret: org.secret, json: { ...SEED_002_FLOW_EXAMPLE, graph } });
      const res = await http('POST', `/ai/followup-flows/${created.body.data.id}/publish`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision: 1 } });
      expect(res.status).toBe(200);
      expect(res.body.data.published_version_id).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('refuses a malformed draft with 400 and unknown fields in the body', async () => {
      const bad = await http('POST', '/ai/followup-flows', { secret: org.secret, json: { ...SEED_002_FLOW_EXAMPLE, graph: { nodes: 'x', edges: [] } } });
      expect(bad.status).toBe(400);
      const unknown = await http('POST', '/ai/followup-flows', { secret: org.secret, json: { ...SEED_002_FLOW_EXAMPLE, color: 'blue' } });
      expect(unknown.status).toBe(400);
      const badSettings = await http('POST', '/ai/followup-flows', { secret: org.secret, json: { ...SEED_002_FLOW_EXAMPLE, settings: { ...SEED_002_FLOW_EXAMPLE.settings, timezone: 'Mars/Olympus' } } });
      expect(badSettings.status).toBe(400);
      expect(JSON.stringify(badSettings.body.error.details)).toContain('unknown time zone');
    });

    it('lists the models; each creates a flow that publishes and activates; stage_required when a model needs a stage', async () => {
      const models = await http('GET', `/ai/followup-flows/from-model${q({ customer_id: SEED_ORG })}`, { secret: reader.secret });
      expect(models.status).toBe(200);
      expect(models.body.data.length).toBeGreaterThanOrEqual(4);
      for (const model of models.body.data) {
        expect(Object.keys(model).sort()).toEqual(['id', 'journey', 'max_messages', 'name', 'requires_stage', 'summary', 'trigger_description']);
        if (model.requires_stage) {
          const refused = await http('POST', '/ai/followup-flows/from-model', { secret: org.secret, json: { customer_id: SEED_ORG, model_id: model.id } });
          expect(refused.status).toBe(422);
          expect(refused.body.error.code).toBe('stage_required');
        }
        const created = await http('POST', '/ai/followup-flows/from-model', { secret: org.secret, json: { customer_id: SEED_ORG, model_id: model.id, stage_id: model.requires_stage ? 'proposal_sent' : undefined } });
        expect(created.status).toBe(201);
        expect(created.body.data).toMatchObject({ model_id: model.id, name: model.name, status: 'draft' });
        await publishAndActivate(created.body.data.id, 1);
      }
    });

    it('keeps tenants apart: another organization gets 404, a read-only key gets 403 on writes', async () => {
      const flow = await createSeedFlow();
      const crossParam = await http('GET', `/ai/followup-flows/${flow.id}${q({ customer_id: SEED_ORG })}`, { secret: other.secret });
      expect(crossParam.status).toBe(404);
      const ownParam = await http('GET', `/ai/followup-flows/${flow.id}${q({ customer_id: other.organizationId })}`, { secret: other.secret });
      expect(ownParam.status).toBe(404);
      expect(ownParam.body.error.code).toBe('not_found');
      const write = await http('POST', '/ai/followup-flows', { secret: reader.secret, json: SEED_002_FLOW_EXAMPLE });
      expect(write.status).toBe(403);
    });
  });

  describe('enrollments and the queue', () => {
    let flowId: string;
    beforeAll(async () => {
      flowId = (await createSeedFlow()).id;
      await publishAndActivate(flowId, 1);
    });

    it('enrolls (201) and returns the same enrollment for a repeated operation_key', async () => {
      // An agent enrolls only into the flows its version lists (seed 002 followup.flow_ids).
      const agent = await http('POST', '/ai/agents', { secret: org.secret, json: { customer_id: SEED_ORG, name: 'Atendimento', followup: { enabled: true, flow_ids: [flowId] } } });
      expect(agent.status).toBe(201);
      const body = { customer_id: SEED_ORG, flow_id: flowId, ...(await contactWrites()), operation_key: randomUUID(), agent_id: agent.body.data.id };
      const first = await http('POST', '/ai/followups/enrollments', { secret: org.secret, json: body });
      expect(first.status).toBe(201);
      expect(first.body.data).toMatchObject({ status: 'active', node_id: 'espera', flow_id: flowId, contact_id: body.contact_id, conversation_id: body.conversation_id, agent_id: body.agent_id });
      const again = await http('POST', '/ai/followups/enrollments', { secret: org.secret, json: body });
      expect(again.status).toBe(201);
      expect(again.body.data.id).toBe(first.body.data.id);
      const other = await http('POST', '/ai/followups/enrollments', { secret: org.secret, json: { ...body, operation_key: randomUUID() } });
      expect(other.status).toBe(409);
      expect(other.body.error.code).toBe('already_enrolled');

      const detail = await http('GET', `/ai/followups/enrollments/${first.body.data.id}${q({ customer_id: SEED_ORG })}`, { secret: reader.secret });
      expect(detail.status).toBe(200);
      expect(detail.body.data.enrollment.id).toBe(first.body.data.id);
      expect(detail.body.data.events.map((e: { type: string }) => e.type)).toEqual(['enrolled']);
      expect(detail.body.data.effects).toEqual([]);
    });

    it('controls an enrollment: pause, resume, advance_now, cancel; already_terminal after', async () => {
      const created = await http('POST', '/ai/followups/enrollments', { secret: org.secret, json: { customer_id: SEED_ORG, flow_id: flowId, contact_id: (await contactWrites()).contact_id, operation_key: randomUUID() } });
      const id = created.body.data.id;
      const control = (expected_revision: number, action: string) => http('POST', `/ai/followups/enrollments/${id}/control`, { secret: org.secret, json: { customer_id: SEED_ORG, expected_revision, action } });
      const paused = await control(1, 'pause');
      expect(paused.body.data).toMatchObject({ status: 'paused_manual', revision: 2 });
      expect((await control(1, 'resume')).status).toBe(409);
      const resumed = await control(2, 'resume');
      expect(resumed.body.data).toMatchObject({ status: 'active', revision: 3 });
      const advanced = await control(3, 'advance_now');
      expect(Date.parse(advanced.body.data.next_run_at)).toBeLessThanOrEqual(Date.now());
      const cancelled = await control(4, 'cancel');
      expect(cancelled.body.data).toMatchObject({ status: 'cancelled', reason: 'cancelled_by_operator' });
      const late = await control(5, 'pause');
      expect(late.status).toBe(409);
      expect(late.body.error.code).toBe('already_terminal');
    });

    it('pages the queue over 150 enrollments created in one transaction, each exactly once', async () => {
      const [version] = await world.sql<{ published_version_id: string }>(`SELECT published_version_id FROM "${world.schema('followups')}".flows WHERE id = $1`, [flowId]);
      // One statement, one transaction: every row has the same created_at.
      await world.sql(
        `INSERT INTO "${world.schema('followups')}".enrollments (id, organization_id, flow_id, version_id, contact_id, operation_key, status, node_id, step, next_run_at, cancel_on_reply, handoff_policy)
         SELECT gen_random_uuid(), $1, $2, $3, gen_random_uuid(), 'bulk-' || g, 'active', 'espera', 1, now() + interval '4 hours', true, 'pause' FROM generate_series(1, 150) g`,
        [SEED_ORG, flowId, version.published_version_id],
      );
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const res = await http('GET', `/ai/followups/queue${q({ customer_id: SEED_ORG, flow_id: flowId, limit: 7, cursor })}`, { secret: reader.secret });
        expect(res.status).toBe(200);
        for (const item of res.body.data.data) {
          expect(item.kind).toBe('enrollment');
          seen.push(item.id);
        }
        cursor = res.body.data.next_cursor ?? undefined;
        pages++;
      } while (cursor && pages < 100);
      const bulk = await world.sql<{ id: string }>(`SELECT id FROM "${world.schema('followups')}".enrollments WHERE flow_id = $1`, [flowId]);
      expect(seen.length).toBe(bulk.length);
      expect(new Set(seen).size).toBe(bulk.length);
      expect(new Set(seen)).toEqual(new Set(bulk.map((b) => b.id)));
    });

    it('returns the documented item shape', async () => {
      const res = await http('GET', `/ai/followups/queue${q({ customer_id: SEED_ORG, limit: 1 })}`, { secret: reader.secret });
      expect(Object.keys(res.body.data.data[0]).sort()).toEqual(
        ['agent_id', 'agent_name', 'contact_id', 'contact_name', 'contact_phone', 'conversation_id', 'created_at', 'flow_id', 'flow_name', 'id', 'kind', 'last_error', 'next_fire_at', 'node_id', 'reason', 'status', 'updated_at'].sort(),
      );
      expect(res.body.data.next_cursor).toEqual(expect.any(String));
    });

    it('answers 422 invalid_cursor for a bad cursor and for one replayed with other filters', async () => {
      const bad = await http('GET', `/ai/followups/queue${q({ customer_id: SEED_ORG, cursor: 'bm90LWEtY3Vyc29y' })}`, { secret: reader.secret });
      expect(bad.status).toBe(422);
      expect(bad.body.error.code).toBe('invalid_cursor');
      const first = await http('GET', `/ai/followups/queue${q({ customer_id: SEED_ORG, limit: 2 })}`, { secret: reader.secret });
      const stale = await http('GET', `/ai/followups/queue${q({ customer_id: SEED_ORG, limit: 2, status: 'active', cursor: first.body.data.next_cursor })}`, { secret: reader.secret });
      expect(stale.status).toBe(422);
      expect(stale.body.error.code).toBe('invalid_cursor');
    });

    it('lists enrollments with limit 1–200', async () => {
      const res = await http('GET', `/ai/followups/enrollments${q({ customer_id: SEED_ORG, flow_id: flowId, limit: 200 })}`, { secret: reader.secret });
      expect(res.status).toBe(200);
      expect(res.body.data.data.length).toBeGreaterThan(150);
      expect((await http('GET', `/ai/followups/enrollments${q({ customer_id: SEED_ORG, limit: 201 })}`, { secret: reader.secret })).status).toBe(400);
      expect((await http('GET', `/ai/followups/enrollments${q({ customer_id: SEED_ORG, limit: 0 })}`, { secret: reader.secret })).status).toBe(400);
    });
  });

  describe('settings', () => {
    it('reads defaults (revision 0), updates with the revision, and refuses a stale one', async () => {
      const initial = await http('GET', `/ai/followups/settings${q({ customer_id: other.organizationId })}`, { secret: other.secret });
      expect(initial.status).toBe(200);
      expect(initial.body.data).toMatchObject({ customer_id: other.organizationId, revision: 0, contact_daily_cap: 3, monthly_send_quota: null });
      const updated = await http('PUT', '/ai/followups/settings', {
        secret: other.secret,
        json: {
          customer_id: other.organizationId,
          expected_revision: 0,
          contact_daily_cap: 2,
          send_window: { start_hour: 8, end_hour: 18, days: [1, 2, 3, 4, 5, 6], timezone: 'America/New_York' },
          approved_templates: [{ name: 'retomada', language: 'pt_BR', parameter_count: 1 }],
        },
      });
      expect(updated.status).toBe(200);
      expect(updated.body.data).toMatchObject({ revision: 1, contact_daily_cap: 2, send_window: { start_hour: 8, timezone: 'America/New_York' } });
      const stale = await http('PUT', '/ai/followups/settings', { secret: other.secret, json: { customer_id: other.organizationId, expected_revision: 0, retention_days: 30 } });
      expect(stale.status).toBe(409);
      expect(stale.body.error.code).toBe('revision_conflict');
      const reread = await http('GET', `/ai/followups/settings${q({ customer_id: other.organizationId })}`, { secret: other.secret });
      expect(reread.body.data).toMatchObject({ revision: 1, contact_daily_cap: 2 });
    });
  });
});
