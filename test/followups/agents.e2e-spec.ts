import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { MessagingRpc, SEED_002_FLOW_EXAMPLE } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;

/**
 * The agents registry and turn promises through the gateway (seed 002 "Follow-ups e retornos"):
 * an agent's current version must have `followup.enabled` and list the flow in
 * `followup.flow_ids` for the agent to enroll a contact (422 otherwise); the queue names the agent;
 * the runtime records what the agent promised in a turn once, and `GET /ai/promises` lists those
 * promises, not the one-off returns (which stay at `/ai/followups/promises`).
 */
describe('Agents registry and turn promises', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let key: SeededKey;
  let reader: SeededKey;
  let other: SeededKey;
  let org: string;

  beforeAll(async () => {
    world = await createTestWorld('fu_agents');
    followups = await startFollowups(world);
    await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
    const config = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    const build = gatewayBuilders(gateway);
    key = await build.organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
    org = key.organizationId;
    const readOnly = await build.apiKeys.create({ organizationId: org, createdByMemberId: key.memberId, scopes: ['agents:read'] });
    reader = { ...key, apiKeyId: readOnly.key.id, secret: readOnly.secret };
    other = await build.organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
  }, 60_000);
  afterAll(() => world.close());

  const post = (path: string, json: object, k: SeededKey = key) => http('POST', path, { secret: k.secret, json });
  const get = (path: string, k: SeededKey = key) => http('GET', path, { secret: k.secret });

  async function activeFlow(): Promise<string> {
    const created = await post('/ai/followup-flows', { ...SEED_002_FLOW_EXAMPLE, customer_id: org, name: `fluxo ${randomUUID().slice(0, 6)}` });
    expect(created.status).toBe(201);
    const published = await post(`/ai/followup-flows/${created.body.data.id}/publish`, { customer_id: org, expected_revision: created.body.data.revision });
    expect(published.status).toBe(200);
    const active = await http('PATCH', `/ai/followup-flows/${created.body.data.id}`, { secret: key.secret, json: { customer_id: org, expected_revision: published.body.data.revision, status: 'active' } });
    expect(active.status).toBe(200);
    return created.body.data.id;
  }

  let n = 0;
  async function contact(): Promise<string> {
    const created = await followups
      .get(RpcClient)
      .callUnchecked<{ id: string; data?: { id: string } }>('messaging', MessagingRpc.ContactCreate, { organization_id: org, name: `Ana ${++n}`, phone: `+55929${String(Date.now() % 1e4).padStart(4, '0')}${String(n).padStart(4, '0')}` });
    const id = (created.data ?? created).id;
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".contacts WHERE contact_id = $1`, [id])).length === 1);
    return id;
  }

  const enroll = (flowId: string, contactId: string, agentId: string) => post('/ai/followups/enrollments', { customer_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID(), agent_id: agentId });

  describe('registry and enrollment rules', () => {
    it('registers an agent with versions; its current version decides whether and into which flows it enrolls; the queue names it', async () => {
      const allowed = await activeFlow();
      const notListed = await activeFlow();
      const created = await post('/ai/agents', { customer_id: org, name: 'Atendimento', followup: { enabled: true, flow_ids: [allowed] } });
      expect(created.status).toBe(201);
      expect(created.body.data).toMatchObject({ id: expect.any(String), customer_id: org, name: 'Atendimento', version: 1, followup: { enabled: true, flow_ids: [allowed] } });
      const agentId = created.body.data.id;

      const ok = await enroll(allowed, await contact(), agentId);
      expect(ok.status).toBe(201);
      expect(ok.body.data).toMatchObject({ agent_id: agentId, flow_id: allowed });
      const queue = await get(`/ai/followups/queue?customer_id=${org}&kind=enrollment&flow_id=${allowed}`);
      expect(queue.body.data.data).toEqual([expect.objectContaining({ id: ok.body.data.id, agent_id: agentId, agent_name: 'Atendimento' })]);

      const refused = await enroll(notListed, await contact(), agentId);
      expect(refused.status).toBe(422);
      expect(refused.body.error).toMatchObject({ code: 'flow_not_allowed_for_agent', details: { agent_id: agentId, version: 1, flow_id: notListed } });

      // Version 2 switches follow-ups off: the agent enrolls nobody, not even into its listed flow.
      const v2 = await post(`/ai/agents/${agentId}/versions`, { customer_id: org, followup: { enabled: false, flow_ids: [allowed, notListed] } });
      expect(v2.status).toBe(201);
      expect(v2.body.data).toMatchObject({ version: 2, name: 'Atendimento', followup: { enabled: false, flow_ids: [allowed, notListed] } });
      const disabled = await enroll(allowed, await contact(), agentId);
      expect(disabled.status).toBe(422);
      expect(disabled.body.error.code).toBe('agent_followup_disabled');

      // Version 3, renamed and on again: the other flow is allowed now.
      expect((await post(`/ai/agents/${agentId}/versions`, { customer_id: org, name: 'Vendas', followup: { enabled: true, flow_ids: [notListed] } })).status).toBe(201);
      expect((await enroll(notListed, await contact(), agentId)).status).toBe(201);
      expect((await enroll(allowed, await contact(), agentId)).body.error.code).toBe('flow_not_allowed_for_agent');

      const detail = await get(`/ai/agents/${agentId}?customer_id=${org}`, reader);
      expect(detail.status).toBe(200);
      expect(detail.body.data).toMatchObject({ name: 'Vendas', version: 3 });
      expect(detail.body.data.versions.map((v: { version: number; followup: { enabled: boolean } }) => [v.version, v.followup.enabled])).toEqual([
        [3, true],
        [2, false],
        [1, true],
      ]);
      const list = await get(`/ai/agents?customer_id=${org}`, reader);
      expect(list.body.data.map((a: Row) => a.id)).toContain(agentId);
      const enrolled = await world.sql<Row>(`SELECT agent_id FROM "${world.schema('followups')}".enrollments WHERE agent_id = $1`, [agentId]);
      expect(enrolled).toHaveLength(2);
    });

    it('refuses an unknown agent (404), a flow of another organization (404), bad bodies (400), writes with a read-only key (403), and hides agents across tenants', async () => {
      const flowId = await activeFlow();
      const unknown = await enroll(flowId, await contact(), randomUUID());
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('not_found');
      const foreignFlow = await post('/ai/agents', { customer_id: org, name: 'X', followup: { enabled: true, flow_ids: [randomUUID()] } });
      expect(foreignFlow.status).toBe(404);
      expect((await post('/ai/agents', { customer_id: org, name: 'X', followup: { enabled: 'yes', flow_ids: [] } })).status).toBe(400);
      expect((await post('/ai/agents', { customer_id: org, name: '', followup: { enabled: true, flow_ids: [] } })).status).toBe(400);
      expect((await post('/ai/agents', { customer_id: org, name: 'X', followup: { enabled: true, flow_ids: [] } }, reader)).status).toBe(403);
      const mine = await post('/ai/agents', { customer_id: org, name: 'Privado', followup: { enabled: true, flow_ids: [flowId] } });
      expect((await get(`/ai/agents/${mine.body.data.id}?customer_id=${other.organizationId}`, other)).status).toBe(404);
      expect((await post(`/ai/agents/${mine.body.data.id}/versions`, { customer_id: other.organizationId, followup: { enabled: true, flow_ids: [] } }, other)).status).toBe(404);
      expect((await get(`/ai/agents?customer_id=${other.organizationId}`, other)).body.data).toEqual([]);
    });

    it('refuses an operation_key reused with another agent (409 idempotency_conflict) without skipping the agent check', async () => {
      const flowId = await activeFlow();
      const allowed = (await post('/ai/agents', { customer_id: org, name: 'Com follow-up', followup: { enabled: true, flow_ids: [flowId] } })).body.data;
      const disabled = (await post('/ai/agents', { customer_id: org, name: 'Sem follow-up', followup: { enabled: false, flow_ids: [flowId] } })).body.data;
      const contactId = await contact();
      const json = { customer_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID(), agent_id: allowed.id };
      const first = await post('/ai/followups/enrollments', json);
      expect(first.status).toBe(201);
      const replay = await post('/ai/followups/enrollments', json);
      expect(replay.status).toBe(201);
      expect(replay.body.data.id).toBe(first.body.data.id);
      const otherAgent = await post('/ai/followups/enrollments', { ...json, agent_id: disabled.id });
      expect(otherAgent.status).toBe(409);
      expect(otherAgent.body.error).toMatchObject({ code: 'idempotency_conflict', details: { enrollment_id: first.body.data.id } });
      const noAgent = await post('/ai/followups/enrollments', { ...json, agent_id: undefined });
      expect(noAgent.status).toBe(409);
    });
  });

  describe('turn promises', () => {
    it('records a turn once, lists it in GET /ai/promises newest first with the agent name and cursor pages, and keeps the one-off returns apart', async () => {
      const agent = (await post('/ai/agents', { customer_id: org, name: 'Atendimento IA', followup: { enabled: false, flow_ids: [] } })).body.data;
      const contactId = await contact();
      const turn = { customer_id: org, turn_id: `turn-${randomUUID()}`, contact_id: contactId, promises: [{ text: 'Enviar a proposta revisada', due_at: '2026-10-03T12:00:00Z' }, { text: 'Confirmar o frete' }] };
      const first = await post(`/ai/agents/${agent.id}/promises`, turn);
      expect(first.status).toBe(201);
      expect(first.body.created).toBe(true);
      expect(first.body.data).toEqual([
        expect.objectContaining({ agent_id: agent.id, agent_name: 'Atendimento IA', turn_id: turn.turn_id, position: 0, contact_id: contactId, text: 'Enviar a proposta revisada', due_at: '2026-10-03T12:00:00.000Z' }),
        expect.objectContaining({ position: 1, text: 'Confirmar o frete', due_at: null }),
      ]);
      const again = await post(`/ai/agents/${agent.id}/promises`, { ...turn, promises: [{ text: 'outra coisa' }] });
      expect(again.status).toBe(201);
      expect(again.body).toEqual({ data: first.body.data, created: false });
      // A replay carrying more positions than the first record appends nothing.
      const longer = await post(`/ai/agents/${agent.id}/promises`, { ...turn, promises: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] });
      expect(longer.body).toEqual({ data: first.body.data, created: false });
      expect(await world.sql(`SELECT 1 FROM "${world.schema('followups')}".turn_promises WHERE turn_id = $1`, [turn.turn_id])).toHaveLength(2);

      const second = await post(`/ai/agents/${agent.id}/promises`, { ...turn, turn_id: `turn-${randomUUID()}`, promises: [{ text: 'Ligar na sexta' }] });
      const page1 = await get(`/ai/promises?customer_id=${org}&agent_id=${agent.id}&limit=2`, reader);
      expect(page1.status).toBe(200);
      expect(page1.body.data.data).toHaveLength(2);
      expect(page1.body.data.data[0].id).toBe(second.body.data[0].id);
      expect(page1.body.data.next_cursor).toEqual(expect.any(String));
      const page2 = await get(`/ai/promises?customer_id=${org}&agent_id=${agent.id}&limit=2&cursor=${page1.body.data.next_cursor}`, reader);
      const seen = [...page1.body.data.data, ...page2.body.data.data].map((p: Row) => p.id).sort();
      expect(seen).toEqual([...first.body.data.map((p: Row) => p.id), second.body.data[0].id].sort());
      expect(page2.body.data.next_cursor).toBeNull();
      expect((await get(`/ai/promises?customer_id=${org}&cursor=bogus`, reader)).body.error.code).toBe('invalid_cursor');
      expect((await get(`/ai/promises?customer_id=${other.organizationId}`, other)).body.data).toEqual({ data: [], next_cursor: null });

      // The one-off returns keep their own route and do not show here; they name a registered agent.
      expect((await get(`/ai/followups/promises?customer_id=${org}&contact_id=${contactId}`, reader)).body.data.data).toEqual([]);
      const oneOff = await post('/ai/followups/promises', {
        customer_id: org,
        contact_id: contactId,
        agent_id: agent.id,
        operation_key: randomUUID(),
        reason: 'Cliente pediu retorno',
        promise: 'Retomar a proposta',
        promised_at: '2030-10-02T10:00:00-03:00',
        outside_window: 'alert',
      });
      expect(oneOff.status).toBe(201);
      expect((await get(`/ai/followups/promises/${oneOff.body.data.id}?customer_id=${org}`, reader)).body.data.agent).toEqual({ id: agent.id, name: 'Atendimento IA' });
      const queue = await get(`/ai/followups/queue?customer_id=${org}&kind=promise&contact_id=${contactId}`, reader);
      expect(queue.body.data.data).toEqual([expect.objectContaining({ id: oneOff.body.data.id, agent_id: agent.id, agent_name: 'Atendimento IA' })]);
      expect((await get(`/ai/promises?customer_id=${org}&contact_id=${contactId}`, reader)).body.data.data.map((p: Row) => p.id)).not.toContain(oneOff.body.data.id);
    });

    it('concurrent first records of one turn keep one whole turn', async () => {
      const agent = (await post('/ai/agents', { customer_id: org, name: 'Paralelo', followup: { enabled: false, flow_ids: [] } })).body.data;
      const contactId = await contact();
      const turnId = `turn-${randomUUID()}`;
      const answers = await Promise.all(
        [
          ['um', 'dois'],
          ['tres', 'quatro', 'cinco'],
        ].map((texts) => post(`/ai/agents/${agent.id}/promises`, { customer_id: org, turn_id: turnId, contact_id: contactId, promises: texts.map((text) => ({ text })) })),
      );
      expect(answers.map((a) => a.status)).toEqual([201, 201]);
      expect(answers.map((a) => a.body.created).sort()).toEqual([false, true]);
      expect(answers[0]!.body.data).toEqual(answers[1]!.body.data);
      const stored = await world.sql<Row>(`SELECT text FROM "${world.schema('followups')}".turn_promises WHERE turn_id = $1 ORDER BY position`, [turnId]);
      expect(stored.map((r) => r.text)).toEqual(answers.find((a) => a.body.created)!.body.data.map((p: Row) => p.text));
    });

    it("an erased contact's turn promises are wiped, and a turn for an erased contact is refused (404 not_found)", async () => {
      const agent = (await post('/ai/agents', { customer_id: org, name: 'Privacidade', followup: { enabled: false, flow_ids: [] } })).body.data;
      const contactId = await contact();
      const turn = { customer_id: org, turn_id: `turn-${randomUUID()}`, contact_id: contactId, promises: [{ text: 'Mandar o contrato para a Ana' }] };
      expect((await post(`/ai/agents/${agent.id}/promises`, turn)).status).toBe(201);
      expect((await get(`/ai/promises?customer_id=${org}&contact_id=${contactId}`, reader)).body.data.data).toHaveLength(1);

      await followups.get(RpcClient).call('messaging', MessagingRpc.ContactErase, { organization_id: org, contact_id: contactId });
      await eventually(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".contacts WHERE contact_id = $1 AND erased_at IS NOT NULL`, [contactId])).length === 1);
      expect((await get(`/ai/promises?customer_id=${org}&contact_id=${contactId}`, reader)).body.data).toEqual({ data: [], next_cursor: null });
      expect(await world.sql(`SELECT 1 FROM "${world.schema('followups')}".turn_promises WHERE contact_id = $1`, [contactId])).toEqual([]);

      const refused = await post(`/ai/agents/${agent.id}/promises`, { ...turn, turn_id: `turn-${randomUUID()}` });
      expect(refused.status).toBe(404);
      expect(refused.body.error.code).toBe('not_found');
      expect(await world.sql(`SELECT 1 FROM "${world.schema('followups')}".turn_promises WHERE contact_id = $1`, [contactId])).toEqual([]);
    });

    it('refuses a turn of an unknown agent or contact (404), an empty turn (400), and a read-only key (403), storing nothing', async () => {
      const agent = (await post('/ai/agents', { customer_id: org, name: 'B', followup: { enabled: false, flow_ids: [] } })).body.data;
      const contactId = await contact();
      const turnId = `turn-${randomUUID()}`;
      const body = { customer_id: org, turn_id: turnId, contact_id: contactId, promises: [{ text: 'x' }] };
      expect((await post(`/ai/agents/${randomUUID()}/promises`, body)).status).toBe(404);
      expect((await post(`/ai/agents/${agent.id}/promises`, { ...body, contact_id: randomUUID() })).status).toBe(404);
      expect((await post(`/ai/agents/${agent.id}/promises`, { ...body, promises: [] })).status).toBe(400);
      expect((await post(`/ai/agents/${agent.id}/promises`, body, reader)).status).toBe(403);
      expect(await world.sql(`SELECT 1 FROM "${world.schema('followups')}".turn_promises WHERE turn_id = $1`, [turnId])).toEqual([]);
    });
  });
});
