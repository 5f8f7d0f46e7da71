import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { CrmEvents, type FlowGraph, type FlowSettings, MessagingRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { aFlow, anActiveFlow, aProvisionedNumber, aWaitingFlow, createTestWorld, eventually, HOUR, lastWeekdayMorning, type TestWorld, textStep, waitStep } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { TriggersService } from '../../apps/followups/src/rules/triggers.service.js';
import { signCrmWebhook } from '../../apps/gateway/src/crm/crm-signature.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, setLimits } from '../messaging/helpers.js';
import { type Dispatcher, SandboxHandle } from '../outbox/harness.js';
import { startFollowupsWithSendPath } from './followups-world.js';

type Row = Record<string, unknown>;

const soon = <T>(probe: () => Promise<T>) => eventually(probe, 30_000, 100);
const WEBHOOK_SECRET = 'crm-test-webhook-secret';

/**
 * CRM events through the gateway (seed 000 "Trigger hooks" and "Stop hooks"): a CRM pushes lead
 * and deal events with a `crm:write` key or a signed webhook; messaging resolves the contact and
 * publishes them once per CRM event id; followups' rules fire on them, and a closed lead stops the
 * contact's live enrollments and takes back a follow-up still waiting in the outbox, which then
 * never reaches the Meta sandbox.
 */
describe('CRM events ingress', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let dispatcher: Dispatcher;
  let followups: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let crm: SeededKey;
  let agentsOnly: SeededKey;
  let org: string;
  const phoneNumberId = `${Date.now() + 11}`.slice(-15);
  const clock = new FixedClock(lastWeekdayMorning());
  let inboundSeconds = Math.floor(Date.now() / 1000);
  let seq = 0;
  const waBase = String(Date.now() % 10_000).padStart(4, '0');
  const newWaId = () => `5592986${waBase}${String(++seq).padStart(2, '0')}`;

  beforeAll(async () => {
    world = await createTestWorld('fu_crm');
    sandbox = await SandboxHandle.start();
    ({ dispatcher, messaging, followups } = await startFollowupsWithSendPath(world, sandbox, { clock }));
    const config = world.config(GatewayConfig, { CRM_WEBHOOK_SECRET: WEBHOOK_SECRET });
    const gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    const build = gatewayBuilders(gateway);
    crm = await build.organizationWithKey({ scopes: ['crm:write'] });
    org = crm.organizationId;
    const other = await build.apiKeys.create({ organizationId: org, createdByMemberId: crm.memberId, scopes: ['agents:read', 'agents:write'] });
    agentsOnly = { ...crm, apiKeyId: other.key.id, secret: other.secret };
    await setLimits(world, org, {});
    // The dispatcher announces the number; messaging and followups keep it in their read models.
    await aProvisionedNumber(world, dispatcher, org, phoneNumberId);
  }, 90_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(() => sandbox.reset());

  const fu = (table: string) => `"${world.schema('followups')}".${table}`;
  const msg = (table: string) => `"${world.schema('messaging')}".${table}`;
  const triggersOf = (kind: string, contactId: string) => world.sql<Row>(`SELECT * FROM ${fu('triggers')} WHERE organization_id = $1 AND type = $2 AND contact_id = $3`, [org, kind, contactId]);
  const enrollmentsOf = (flowId: string) => world.sql<Row>(`SELECT * FROM ${fu('enrollments')} WHERE flow_id = $1`, [flowId]);
  const published = (eventId: string) => world.sql<Row>(`SELECT * FROM ${msg('outbox_events')} WHERE event_id = $1`, [eventId]);
  const textsTo = async (waId: string) => (await sandbox.received(waId)).filter((c) => c.context.type === 'text').map((c) => (c.body as { text: { body: string } }).text.body);
  const push = (json: object, key: SeededKey = crm) => http('POST', '/crm/events', { secret: key.secret, json });

  /** A CRM contact made by messaging, known to followups' read model. */
  async function contact(): Promise<{ id: string; email: string; phone: string }> {
    const n = ++seq;
    const email = `lead${n}.${waBase}@example.com`;
    const phone = `+55929${waBase}${String(n).padStart(4, '0')}`;
    const { id } = await followups.get(RpcClient).call('messaging', MessagingRpc.ContactCreate, { organization_id: org, name: `Lead ${n}`, email, phone });
    await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('contacts')} WHERE contact_id = $1`, [id])).length === 1);
    return { id, email, phone };
  }

  const activeFlow = (graph: FlowGraph, settings: FlowSettings) => anActiveFlow(followups.get(FlowsService), org, { name: `crm ${randomUUID().slice(0, 6)}`, graph, settings });

  /** A rule flow that tags (no send): trigger → wait 1 h → tag → end. */
  const ruleFlow = (trigger: FlowSettings['trigger']): [FlowGraph, FlowSettings] => {
    const { graph, settings } = aWaitingFlow(trigger, ['crm']);
    return [graph, settings];
  };

  describe('POST /crm/events', () => {
    it('publishes a lead status change for the contact named by email once per CRM event id; the rule enrolls the contact once', async () => {
      const who = await contact();
      const flowId = await activeFlow(...ruleFlow({ kind: 'lead_status_changed', cancel_on_reply: false, status: 'qualified' }));
      const eventId = `evt-${randomUUID()}`;
      const event = { event_id: eventId, type: 'lead.status_changed', contact: { email: who.email.toUpperCase() }, lead_id: 'lead-4711', status: 'qualified', previous_status: 'new' };

      const first = await push(event);
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ event_id: `crm:${org}:${eventId}`, type: 'lead.status_changed', contact_id: who.id, duplicate: false, received_at: expect.any(String) });
      const again = await push({ ...event, status: 'lost' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ ...first.body, duplicate: true });

      const [row] = await published(`crm:${org}:${eventId}`);
      expect(row).toMatchObject({ type: CrmEvents.LeadStatusChanged });
      expect((row.payload as { data?: unknown } | undefined)?.data ?? row.data ?? row.payload).toMatchObject({ lead_id: 'lead-4711', contact_id: who.id, status: 'qualified', previous_status: 'new', crm_event_id: eventId });
      await soon(async () => (await triggersOf('lead_status_changed', who.id)).length === 1);
      await followups.get(TriggersService).processBatch();
      const enrolled = await enrollmentsOf(flowId);
      expect(enrolled).toHaveLength(1);
      expect(enrolled[0]).toMatchObject({ contact_id: who.id, status: 'active', node_id: 'w' });
      expect(await published(`crm:${org}:${eventId}`)).toHaveLength(1);
      expect(await world.sql(`SELECT 1 FROM ${msg('crm_events')} WHERE organization_id = $1 AND event_id = $2`, [org, eventId])).toHaveLength(1);
    });

    it('resolves a lead created by phone and fires a lead_created rule', async () => {
      const who = await contact();
      const flowId = await activeFlow(...ruleFlow({ kind: 'lead_created', cancel_on_reply: false }));
      const res = await push({ event_id: `evt-${randomUUID()}`, type: 'lead.created', contact: { phone: who.phone.replace('+', '') }, lead_id: 'lead-1', status: 'new' });
      expect(res.status).toBe(200);
      expect(res.body.contact_id).toBe(who.id);
      await soon(async () => (await triggersOf('lead_created', who.id)).length === 1);
      await followups.get(TriggersService).processBatch();
      expect(await enrollmentsOf(flowId)).toEqual([expect.objectContaining({ contact_id: who.id, status: 'active' })]);
    });

    it("refuses an event whose contact is not the organization's (422 unknown_contact), a bad body (400), and a key without crm:write (403), storing nothing", async () => {
      const eventId = `evt-${randomUUID()}`;
      const unknown = await push({ event_id: eventId, type: 'lead.created', contact: { email: 'nobody@example.com' }, lead_id: 'lead-2' });
      expect(unknown.status).toBe(422);
      expect(unknown.body.error.code).toBe('unknown_contact');
      const foreign = await push({ event_id: eventId, type: 'lead.created', contact: { contact_id: randomUUID() }, lead_id: 'lead-2' });
      expect(foreign.status).toBe(422);

      const who = await contact();
      const noStage = await push({ event_id: eventId, type: 'deal.stage_changed', contact: { contact_id: who.id }, deal_id: 'deal-1' });
      expect(noStage.status).toBe(400);
      expect(noStage.body.error).toMatchObject({ code: 'validation_failed', details: { field: 'stage_id' } });
      const badType = await push({ event_id: eventId, type: 'lead.deleted', contact: { contact_id: who.id }, lead_id: 'x' });
      expect(badType.status).toBe(400);
      const closedOnCreate = await push({ event_id: eventId, type: 'lead.created', contact: { contact_id: who.id }, lead_id: 'x', closed: 'won' });
      expect(closedOnCreate.status).toBe(400);
      const wrongScope = await push({ event_id: eventId, type: 'lead.created', contact: { contact_id: who.id }, lead_id: 'x' }, agentsOnly);
      expect(wrongScope.status).toBe(403);
      expect(await world.sql(`SELECT 1 FROM ${msg('crm_events')} WHERE event_id = $1`, [eventId])).toEqual([]);
      expect(await published(`crm:${org}:${eventId}`)).toEqual([]);
    });
  });

  describe('POST /webhooks/crm (signed)', () => {
    const deliver = (raw: string, signature?: string) => http('POST', '/webhooks/crm', { body: raw, headers: { 'content-type': 'application/json', ...(signature ? { 'x-touchpoint-signature': signature } : {}) } });

    it('accepts a delivery signed with the secret and fires a deal_stage_changed rule; a replay of it is answered as one', async () => {
      const who = await contact();
      const flowId = await activeFlow(...ruleFlow({ kind: 'deal_stage_changed', cancel_on_reply: false, stage_id: 'proposal' }));
      const eventId = `evt-${randomUUID()}`;
      const raw = JSON.stringify({ organization_id: org, event_id: eventId, type: 'deal.stage_changed', contact: { contact_id: who.id }, deal_id: 'deal-42', stage_id: 'proposal', previous_stage_id: 'qualified' });
      const signature = signCrmWebhook(raw, WEBHOOK_SECRET, Math.floor(Date.now() / 1000));
      const first = await deliver(raw, signature);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ contact_id: who.id, duplicate: false });
      const replay = await deliver(raw, signature);
      expect(replay.status).toBe(200);
      expect(replay.body.duplicate).toBe(true);
      await soon(async () => (await triggersOf('deal_stage_changed', who.id)).length === 1);
      await followups.get(TriggersService).processBatch();
      expect(await enrollmentsOf(flowId)).toEqual([expect.objectContaining({ contact_id: who.id, status: 'active' })]);
      expect(await published(`crm:${org}:${eventId}`)).toHaveLength(1);
    });

    it('refuses a missing, wrong, re-bodied or stale signature (401) and stores nothing', async () => {
      const who = await contact();
      const eventId = `evt-${randomUUID()}`;
      const raw = JSON.stringify({ organization_id: org, event_id: eventId, type: 'lead.created', contact: { contact_id: who.id }, lead_id: 'lead-9' });
      const now = Math.floor(Date.now() / 1000);
      const tampered = raw.replace('lead-9', 'lead-8');
      for (const [body, signature] of [
        [raw, undefined],
        [raw, signCrmWebhook(raw, 'another-secret', now)],
        [tampered, signCrmWebhook(raw, WEBHOOK_SECRET, now)],
        [raw, signCrmWebhook(raw, WEBHOOK_SECRET, now - 3600)],
        [raw, `t=${now},v1=zz`],
      ] as [string, string | undefined][]) {
        const res = await deliver(body, signature);
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe('unauthorized');
      }
      expect(await world.sql(`SELECT 1 FROM ${msg('crm_events')} WHERE event_id = $1`, [eventId])).toEqual([]);
    });
  });

  describe('lead closed', () => {
    /** trigger → text "Oi" → wait 2 h → text "Ainda por aí?" → end. */
    const { graph: twoTextsGraph, settings: twoTextsSettings } = aFlow({ steps: [textStep('a1', 'Oi'), waitStep('w', 2 * HOUR), textStep('a2', 'Ainda por aí?')] });
    const TWO_TEXTS: [FlowGraph, FlowSettings] = [twoTextsGraph, twoTextsSettings];

    it.each(['lost', 'won'] as const)("a lead closed %s stops the contact's live enrollments with that reason and the queued follow-up never reaches the sandbox", async (closed) => {
      const waId = newWaId();
      await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, `Oi, sou ${waId}`, (inboundSeconds += 5), phoneNumberId));
      const [inbound] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM ${msg('messages')} WHERE direction = 'inbound' AND body = $1`, [`Oi, sou ${waId}`]);
      await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('contacts')} WHERE contact_id = $1 AND last_inbound_at IS NOT NULL`, [inbound!.contact_id])).length === 1);
      const flowId = await activeFlow(...TWO_TEXTS);
      const otherFlowId = await activeFlow(...ruleFlow({ kind: 'manual', cancel_on_reply: false }));
      const enrollments = followups.get(EnrollmentsService);
      const { enrollment } = await enrollments.create({ organization_id: org, flow_id: flowId, contact_id: inbound!.contact_id, conversation_id: inbound!.conversation_id, operation_key: randomUUID() });
      const { enrollment: waiting } = await enrollments.create({ organization_id: org, flow_id: otherFlowId, contact_id: inbound!.contact_id, operation_key: randomUUID() });
      expect(await followups.get(ReleaseService).releaseOne()).toBe('released');
      const [effect] = await world.sql<Row>(`SELECT * FROM ${fu('effects')} WHERE enrollment_id = $1 AND kind = 'send'`, [enrollment.id]);
      expect(effect).toMatchObject({ status: 'queued', text: 'Oi' });
      const outboxEntry = async () => (await world.sql<Row>(`SELECT * FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE idempotency_key = $1`, [effect!.idempotency_key]))[0];
      await soon(async () => (await outboxEntry())?.status === 'pending');

      const res = await push({ event_id: `evt-${randomUUID()}`, type: 'lead.status_changed', contact: { phone: `+${waId}` }, lead_id: 'lead-77', status: closed === 'won' ? 'ganho' : 'perdido', closed });
      expect(res.status).toBe(200);
      expect(res.body.contact_id).toBe(inbound!.contact_id);

      await soon(async () => (await enrollmentsOf(flowId))[0]?.status === 'cancelled');
      expect((await enrollmentsOf(flowId))[0]).toMatchObject({ status: 'cancelled', reason: `lead_${closed}` });
      expect((await enrollmentsOf(otherFlowId))[0]).toMatchObject({ id: waiting.id, status: 'cancelled', reason: `lead_${closed}` });
      await soon(async () => (await outboxEntry()).status === 'cancelled');
      await soon(async () => (await world.sql<Row>(`SELECT status FROM ${fu('effects')} WHERE id = $1`, [effect!.id]))[0]?.status === 'cancelled');
      await dispatcher.drain.drain(5000);
      dispatcher.clock.advance(7000);
      await dispatcher.drain.drain(5000);
      expect(await textsTo(waId)).toEqual([]);
      const events = (await enrollments.get({ organization_id: org, enrollment_id: enrollment.id })).events.map((e) => ({ type: e.type, data: e.data }));
      expect(events).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'stopped', data: expect.objectContaining({ cause: 'lead_closed', reason: `lead_${closed}` }) }), expect.objectContaining({ type: 'send_cancel_requested' })]));
    });

    it('a status change that does not close the lead stops nothing', async () => {
      const who = await contact();
      const flowId = await activeFlow(...ruleFlow({ kind: 'manual', cancel_on_reply: false }));
      await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: flowId, contact_id: who.id, operation_key: randomUUID() });
      const res = await push({ event_id: `evt-${randomUUID()}`, type: 'lead.status_changed', contact: { contact_id: who.id }, lead_id: 'lead-5', status: 'negotiation' });
      expect(res.status).toBe(200);
      await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('inbox_events')} WHERE event_id = $1`, [res.body.event_id])).length > 0);
      expect((await enrollmentsOf(flowId))[0]).toMatchObject({ status: 'active', reason: null });
    });
  });
});
