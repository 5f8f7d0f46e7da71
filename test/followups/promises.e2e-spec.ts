import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { CrmEvents, MessagingEvents, MessagingRpc, OutboxEvents } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, eventually, HOUR, publishEvent, type TestWorld, aMessageReceived } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { PromiseFiringService } from '../../apps/followups/src/promises/promise-firing.service.js';
import { PromisesService } from '../../apps/followups/src/promises/promises.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, registerSender } from '../messaging/helpers.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
/** What messaging answers to a contact create or get (either enveloped in `data` or not). */
type ContactAnswer = { contact_id: string; id: string; tags: string[]; data?: { contact_id: string; id: string; tags: string[] } };

/**
 * One-off returns through the gateway (seed 002 "Retornos avulsos", "Fila"):
 * the documented body, one pending per contact, operation_key idempotency, cursor pages, cancel,
 * and the due time outside the 24-hour window with `template` (send, outcome, unknown → resolve)
 * and with `alert` (a notification through the real messaging service).
 */
describe('One-off returns (promises)', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let sut: PromisesService;
  let firing: PromiseFiringService;
  let admin: SeededKey;
  let operator: SeededKey;
  let conversationId: string;
  let org: string;
  let schema: string;
  // The seed's queue example was created at this instant.
  const clock = new FixedClock(new Date('2026-09-25T13:00:00Z'));
  const sender = randomUUID();
  const agent = '44444444-4444-4444-8444-444444444444';

  beforeAll(async () => {
    world = await createTestWorld('fu_promises');
    followups = await startFollowups(world, { clock });
    const messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
    const config = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    const build = gatewayBuilders(gateway);
    admin = await build.organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
    org = admin.organizationId;
    const member = await build.members.add({ organizationId: org, email: 'operator@example.com', role: 'operator' });
    const key = await build.apiKeys.create({ organizationId: org, createdByMemberId: member.id, scopes: ['agents:read', 'agents:write'] });
    operator = { organizationId: org, memberId: member.id, apiKeyId: key.key.id, secret: key.secret };
    // A conversation of the organization for the returns to name (a return's conversation must be the caller's).
    await registerSender(world, org, 'pn-promises');
    await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), '5592900001111', 'Oi', Math.floor(Date.now() / 1000), 'pn-promises'));
    [{ conversation_id: conversationId }] = await world.sql<{ conversation_id: string }>(`SELECT conversation_id FROM "${world.schema('messaging')}".messages LIMIT 1`);
    sut = followups.get(PromisesService);
    firing = followups.get(PromiseFiringService);
    schema = world.schema('followups');
    await followups.get(SettingsService).update({
      organization_id: org,
      expected_revision: 0,
      send_window: { start_hour: 0, end_hour: 24, days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' },
      approved_templates: [{ name: 'retomada_conversa', language: 'pt_BR', parameter_count: 0 }],
    });
    await publishEvent(world, OutboxEvents.SenderConnected, org, { sender_id: sender, channel: 'whatsapp', is_default: true, status: 'connected' });
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema}".senders WHERE sender_id = $1`, [sender])).length === 1);
  });
  afterAll(() => world.close());

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const row = async (id: string) => (await sql<Row & { alert: { notification_id: string }; due_at: Date }>(`SELECT * FROM fu.promises WHERE id = $1`, [id]))[0];

  /** A contact made by messaging (so its notifications have someone to name); followups reads it from the event. */
  async function contact(name = 'Ana', phone = `+55929${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`): Promise<string> {
    const created = await followups.get(RpcClient).callUnchecked<ContactAnswer>('messaging', MessagingRpc.ContactCreate, { organization_id: org, name, phone });
    const id = (created.data ?? created).contact_id ?? (created.data ?? created).id;
    // messaging's contact events carry the phone (not the name) into followups' read model.
    await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1 AND phone = $2`, [id, phone])).length === 1);
    return id;
  }

  const body = (contactId: string, extra: Record<string, unknown> = {}) => ({
    customer_id: org,
    contact_id: contactId,
    conversation_id: conversationId,
    agent_id: agent,
    operation_key: randomUUID(),
    reason: 'Cliente pediu retorno após falar com o sócio',
    promise: 'Retomar a proposta da cadeira ergonômica',
    promised_at: '2026-10-02T10:00:00-03:00',
    outside_window: 'alert',
    ...extra,
  });
  const create = (json: object, key: SeededKey = admin) => http('POST', '/ai/followups/promises', { secret: key.secret, json });

  describe('create, list, get, cancel', () => {
    it('schedules the documented body (201, due_at effective), repeats by operation_key, and allows one pending per contact (409 already_pending)', async () => {
      const contactId = await contact();
      const first = await create(body(contactId, { operation_key: '66666666-6666-4666-8666-666666666666' }));
      expect(first.status).toBe(201);
      expect(first.body.data).toMatchObject({
        customer_id: org,
        contact_id: contactId,
        agent_id: agent,
        status: 'scheduled',
        promised_at: '2026-10-02T13:00:00.000Z',
        due_at: '2026-10-02T13:00:00.000Z',
        outside_window: 'alert',
        reason: 'Cliente pediu retorno após falar com o sócio',
      });
      const again = await create(body(contactId, { operation_key: '66666666-6666-4666-8666-666666666666' }));
      expect(again.status).toBe(201);
      expect(again.body.data.id).toBe(first.body.data.id);

      const second = await create(body(contactId));
      expect(second.status).toBe(409);
      expect(second.body.error.code).toBe('already_pending');
      expect(await sql(`SELECT id FROM fu.promises WHERE contact_id = $1`, [contactId])).toHaveLength(1);

      // A return promised in the past is due now.
      const other = await create(body(await contact('Bia'), { promised_at: '2026-09-01T10:00:00Z' }));
      expect(other.body.data.due_at).toBe(clock.now().toISOString());
    });

    it('refuses a key created by an operator (403 forbidden) and a bad body (400)', async () => {
      const contactId = await contact();
      const refused = await create(body(contactId), operator);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('forbidden');
      expect((await create(body(contactId, { outside_window: 'sms' }))).status).toBe(400);
      expect(await sql(`SELECT id FROM fu.promises WHERE contact_id = $1`, [contactId])).toEqual([]);
    });

    it('lists with a cursor ({data: {data, next_cursor}}), filters by contact and status, shows the detail, and appears in the queue but not in GET /ai/promises (the turn promises)', async () => {
      const contacts = [await contact('Caio'), await contact('Duda'), await contact('Enzo')];
      const ids: string[] = [];
      for (const c of contacts) {
        // Each newer than every return of the earlier tests.
        clock.advance(1000);
        ids.push((await create(body(c))).body.data.id);
      }
      const page1 = await http('GET', `/ai/followups/promises?customer_id=${org}&limit=2`, { secret: operator.secret });
      expect(page1.status).toBe(200);
      expect(page1.body.data.data.map((p: Row) => p.id)).toEqual([ids[2], ids[1]]);
      expect(page1.body.data.next_cursor).toEqual(expect.any(String));
      const page2 = await http('GET', `/ai/followups/promises?customer_id=${org}&limit=2&cursor=${page1.body.data.next_cursor}`, { secret: operator.secret });
      expect(page2.body.data.data[0].id).toBe(ids[0]);
      expect((await http('GET', `/ai/followups/promises?customer_id=${org}&cursor=bogus`, { secret: operator.secret })).body.error.code).toBe('invalid_cursor');
      const byContact = await http('GET', `/ai/followups/promises?customer_id=${org}&contact_id=${contacts[1]}&status=scheduled`, { secret: operator.secret });
      expect(byContact.body.data.data.map((p: Row) => p.id)).toEqual([ids[1]]);

      const detail = await http('GET', `/ai/followups/promises/${ids[1]}?customer_id=${org}`, { secret: operator.secret });
      expect(detail.body.data).toMatchObject({ id: ids[1], contact: { id: contacts[1], phone: expect.stringMatching(/^\+55929/) }, agent: { id: agent }, run: null, alert: null });

      // GET /ai/promises is the read-only record of what agents said in their turns, not the one-off returns.
      const registry = await http('GET', `/ai/promises?customer_id=${org}&contact_id=${contacts[2]}`, { secret: operator.secret });
      expect(registry.status).toBe(200);
      expect(registry.body.data).toEqual({ data: [], next_cursor: null });

      const queue = await http('GET', `/ai/followups/queue?customer_id=${org}&kind=promise&contact_id=${contacts[0]}`, { secret: operator.secret });
      expect(queue.body.data.data).toEqual([
        {
          kind: 'promise',
          id: ids[0],
          contact_id: contacts[0],
          contact_name: null,
          contact_phone: expect.stringMatching(/^\+55929/),
          conversation_id: conversationId,
          flow_id: null,
          flow_name: null,
          agent_id: agent,
          agent_name: null,
          status: 'scheduled',
          node_id: null,
          next_fire_at: '2026-10-02T13:00:00.000Z',
          reason: 'Cliente pediu retorno após falar com o sócio',
          updated_at: expect.any(String),
          created_at: expect.any(String),
          last_error: null,
        },
      ]);
      // Without kind the queue merges both; kind=enrollment leaves returns out.
      expect((await http('GET', `/ai/followups/queue?customer_id=${org}&contact_id=${contacts[0]}`, { secret: operator.secret })).body.data.data.map((i: Row) => i.kind)).toEqual(['promise']);
      expect((await http('GET', `/ai/followups/queue?customer_id=${org}&kind=enrollment&contact_id=${contacts[0]}`, { secret: operator.secret })).body.data.data).toEqual([]);
    });

    it('the queue merges enrollments and returns newest first, and its cursor walks across both kinds', async () => {
      const contactId = await contact('Ivo');
      const flows = followups.get(FlowsService);
      const flow = await flows.create({
        organization_id: org,
        name: 'fila',
        graph: {
          nodes: [
            { id: 't', type: 'trigger', config: {} },
            { id: 'w', type: 'wait', config: { mode: 'fixed', duration_ms: HOUR } },
            { id: 'e', type: 'end', config: {} },
          ],
          edges: [
            { id: 'e1', source: 't', target: 'w', condition: { type: 'always' } },
            { id: 'e2', source: 'w', target: 'e', condition: { type: 'always' } },
          ],
        },
        settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause' },
      });
      const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
      await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
      const enrollments = followups.get(EnrollmentsService);
      const order: { kind: string; id: string }[] = [];
      clock.advance(1000);
      order.push({ kind: 'enrollment', id: (await enrollments.create({ organization_id: org, flow_id: flow.id, contact_id: contactId, operation_key: randomUUID() })).enrollment.id });
      clock.advance(1000);
      order.push({ kind: 'promise', id: (await create(body(contactId))).body.data.id });
      clock.advance(1000);
      const other = await contact('Juca');
      order.push({ kind: 'enrollment', id: (await enrollments.create({ organization_id: org, flow_id: flow.id, contact_id: other, operation_key: randomUUID() })).enrollment.id });

      const seen: { kind: string; id: string }[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 5; page++) {
        const res = await http('GET', `/ai/followups/queue?customer_id=${org}&limit=1${cursor ? `&cursor=${cursor}` : ''}`, { secret: operator.secret });
        expect(res.status).toBe(200);
        seen.push(...res.body.data.data.map((i: Row) => ({ kind: i.kind, id: i.id })));
        cursor = res.body.data.next_cursor ?? undefined;
        if (seen.length >= 3) break;
      }
      expect(seen.slice(0, 3)).toEqual([...order].reverse());
      const enrollmentItem = (await http('GET', `/ai/followups/queue?customer_id=${org}&contact_id=${contactId}`, { secret: operator.secret })).body.data.data;
      expect(enrollmentItem.map((i: Row) => i.kind)).toEqual(['promise', 'enrollment']);
      expect(enrollmentItem[1]).toMatchObject({ flow_id: flow.id, flow_name: 'fila', node_id: 'w', status: 'active' });
    });

    it('cancel is idempotent and frees the contact for a new return', async () => {
      const contactId = await contact();
      const p = (await create(body(contactId))).body.data;
      const cancel = () => http('POST', `/ai/followups/promises/${p.id}/cancel`, { secret: admin.secret, json: { customer_id: org, reason: 'cliente fechou por telefone' } });
      const first = await cancel();
      expect(first.status).toBe(200);
      expect(first.body.data).toMatchObject({ id: p.id, status: 'cancelled', cancel_reason: 'cliente fechou por telefone' });
      expect((await cancel()).body.data.status).toBe('cancelled');
      expect((await create(body(contactId))).status).toBe(201);
    });

    it("a closed lead (won, lost), an opt-out and an erasure cancel the contact's pending return with that reason", async () => {
      const [won, lost, optedOut, erased, untouched] = [await contact('Lia'), await contact('Leo'), await contact('Ola'), await contact('Eva'), await contact('Uri')];
      const ids = new Map<string, string>();
      for (const c of [won, lost, optedOut, erased, untouched]) {
        const created = await create(body(c));
        expect(created.status).toBe(201);
        ids.set(c, created.body.data.id);
      }
      await publishEvent(world, CrmEvents.LeadStatusChanged, org, { lead_id: 'lead-1', contact_id: won, status: 'ganho', previous_status: 'proposta', closed: 'won' });
      await publishEvent(world, CrmEvents.LeadStatusChanged, org, { lead_id: 'lead-2', contact_id: lost, status: 'perdido', closed: 'lost' });
      // Not closed: the lead only moved on; its contact's return stays scheduled.
      const moved = await publishEvent(world, CrmEvents.LeadStatusChanged, org, { lead_id: 'lead-3', contact_id: untouched, status: 'negociacao' });
      await publishEvent(world, MessagingEvents.ContactOptedOut, org, { contact_id: optedOut, channel: 'whatsapp', message_id: null });
      await publishEvent(world, MessagingEvents.ContactErased, org, { contact_id: erased, kind: 'crm' });
      for (const [c, reason] of [
        [won, 'lead_won'],
        [lost, 'lead_lost'],
        [optedOut, 'opted_out'],
        [erased, 'contact_erased'],
      ] as const) {
        await eventually(async () => (await row(ids.get(c)!)).status === 'cancelled');
        expect(await row(ids.get(c)!)).toMatchObject({ status: 'cancelled', cancel_reason: reason, fired_at: null });
      }
      await eventually(async () => (await sql(`SELECT 1 FROM fu.inbox_events WHERE event_id = $1`, [moved.event_id])).length > 0);
      expect(await row(ids.get(untouched)!)).toMatchObject({ status: 'scheduled', cancel_reason: null });
      // A cancelled return frees the contact: a new one may be scheduled for the won lead's contact.
      expect((await create(body(won))).status).toBe(201);
    });
  });

  describe('due outside the 24-hour window', () => {
    const dueNow = async (contactId: string, outsideWindow: 'alert' | 'template', extra: Record<string, unknown> = {}, via: 'api' | 'service' = 'api') => {
      // The contact last wrote 25 h before the due time: the window is closed.
      await publishEvent(world, MessagingEvents.MessageReceived, org, aMessageReceived(contactId, { external_id: 'wamid.y', text: 'vou falar com meu sócio', from: '+5592900000000' }), new Date(clock.now().getTime() - 25 * HOUR));
      await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1 AND last_inbound_at IS NOT NULL`, [contactId])).length === 1);
      const json = body(contactId, { outside_window: outsideWindow, promised_at: clock.now().toISOString(), ...extra });
      const p =
        via === 'api'
          ? (await create(json)).body.data
          : // Past the edge, which refuses a contact the caller does not have: the service itself, as a rule would.
            (await sut.create({ ...(json as Record<string, unknown>), organization_id: org } as never)).promise;
      expect(p.status).toBe('scheduled');
      return p.id as string;
    };
    const fireUntil = async (id: string) => {
      for (let i = 0; i < 20 && (await row(id)).status === 'scheduled'; i++) await firing.fireOne();
    };

    it('with template: sends the approved template through messaging (template_dispatching), completes on the send outcome, and is no longer cancellable (409 already_terminal)', async () => {
      const id = await dueNow(await contact('Fabi'), 'template');
      await fireUntil(id);
      const fired = await row(id);
      expect(fired).toMatchObject({ status: 'template_dispatching', run: { message_key: `promise:${id}` } });
      const [command] = await sql<{ payload: { data: Record<string, unknown> } }>(`SELECT payload FROM fu.outbox_events WHERE type = 'messaging.send' AND event_id = $1`, [`promise:${id}`]);
      expect(command.payload.data).toMatchObject({ idempotency_key: `promise:${id}`, template: { name: 'retomada_conversa', language: 'pt_BR' }, requester: 'followups', outbox_sender_id: sender });
      expect(command.payload.data.text).toBeUndefined();

      const cancelled = await http('POST', `/ai/followups/promises/${id}/cancel`, { secret: admin.secret, json: { customer_id: org } });
      expect(cancelled.status).toBe(409);
      expect(cancelled.body.error.code).toBe('already_terminal');

      await publishEvent(world, MessagingEvents.MessageSent, org, { message_id: randomUUID(), conversation_id: randomUUID(), contact_id: fired.contact_id, channel: 'whatsapp', idempotency_key: `promise:${id}`, requester: 'followups', status: 'sent' });
      await eventually(async () => (await row(id)).status === 'completed');
    });

    it('with template: an ambiguous send leaves it unknown until reconciled (resolve → completed with the evidence)', async () => {
      const id = await dueNow(await contact('Gabi'), 'template', { template: { name: 'retomada_proposta', language: 'pt_BR', parameters: ['Gabi'] } });
      await fireUntil(id);
      const [command] = await sql<{ payload: { data: Record<string, unknown> } }>(`SELECT payload FROM fu.outbox_events WHERE event_id = $1`, [`promise:${id}`]);
      expect(command.payload.data.template).toEqual({ name: 'retomada_proposta', language: 'pt_BR', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Gabi' }] }] });
      await publishEvent(world, OutboxEvents.EntryAmbiguous, org, { entry_id: randomUUID(), idempotency_key: `promise:${id}`, channel: 'whatsapp' });
      await eventually(async () => (await row(id)).status === 'unknown');

      const resolveBody = { customer_id: org, outcome: 'sent', note: 'Mensagem conferida no WhatsApp Manager às 10h12.', wamid: 'wamid.HBgNNTUxMTk5OTk5ODg4OBUCABIYIDNBMEY' };
      expect((await http('POST', `/ai/followups/promises/${id}/resolve`, { secret: operator.secret, json: resolveBody })).status).toBe(403);
      const resolved = await http('POST', `/ai/followups/promises/${id}/resolve`, { secret: admin.secret, json: resolveBody });
      expect(resolved.status).toBe(200);
      expect(resolved.body.data).toEqual({ resolved: true });
      expect(await row(id)).toMatchObject({ status: 'completed', resolution: { outcome: 'sent', wamid: resolveBody.wamid } });
      expect((await http('POST', `/ai/followups/promises/${id}/resolve`, { secret: admin.secret, json: resolveBody })).body.error.code).toBe('not_ambiguous');
    });

    it('with alert: notifies the team through messaging (alerted, the notification recorded there) and sends nothing to the contact', async () => {
      const contactId = await contact('Helô');
      const id = await dueNow(contactId, 'alert');
      await fireUntil(id);
      const fired = await row(id);
      expect(fired.status).toBe('alerted');
      expect(fired.alert.notification_id).toEqual(expect.any(String));
      const notifications = await world.sql<Row>(`SELECT contact_id, title, body, priority FROM "${world.schema('messaging')}".notifications WHERE id = $1`, [fired.alert.notification_id]);
      expect(notifications).toEqual([{ contact_id: contactId, title: 'Retorno fora da janela de 24 horas', body: 'Retomar a proposta da cadeira ergonômica — Cliente pediu retorno após falar com o sócio', priority: 'high' }]);
      expect(await sql(`SELECT 1 FROM fu.outbox_events WHERE event_id = $1`, [`promise:${id}`])).toEqual([]);
      const detail = await http('GET', `/ai/followups/promises/${id}?customer_id=${org}`, { secret: admin.secret });
      expect(detail.body.data).toMatchObject({ status: 'alerted', alert: { notification_id: fired.alert.notification_id } });
      expect((await http('POST', `/ai/followups/promises/${id}/cancel`, { secret: admin.secret, json: { customer_id: org } })).body.error.code).toBe('already_terminal');
    });

    it('with alert: when messaging refuses the alert the return retries every 30 s and fails after 5 tries (no hot loop)', async () => {
      // A contact messaging does not know: its notification is refused (not_found).
      const id = await dueNow(randomUUID(), 'alert', {}, 'service');
      for (let attempt = 1; attempt <= 5; attempt++) {
        expect(await firing.fireOne()).toBe(attempt < 5 ? 'waiting' : 'failed');
        const r = await row(id);
        expect(r.attempts).toBe(attempt);
        expect(r.last_error).toMatch(/^alert: /);
        if (attempt < 5) {
          expect(r).toMatchObject({ status: 'scheduled' });
          expect(r.due_at.getTime()).toBe(clock.now().getTime() + 30_000);
          expect(await firing.fireOne()).toBe('idle');
          clock.advance(30_000);
        } else expect(r.status).toBe('failed');
      }
    });

    it('with the follow-ups entitlement off: a new return is refused (409 conflict, plan_lost) and a due one is cancelled (plan_lost) without alerting anyone', async () => {
      const settings = followups.get(SettingsService);
      const contactId = await contact('Ivo');
      const id = await dueNow(contactId, 'alert');
      await settings.setEntitlement({ organization_id: org, followups_enabled: false });
      try {
        const refused = await create(body(await contact('Jo')));
        expect(refused.status).toBe(409);
        expect(refused.body.error).toMatchObject({ code: 'conflict', details: { reason: 'plan_lost' } });
        await fireUntil(id);
        const fired = await row(id);
        expect(fired).toMatchObject({ status: 'cancelled', cancel_reason: 'plan_lost', alert: null, fired_at: null });
        expect(await world.sql(`SELECT 1 FROM "${world.schema('messaging')}".notifications WHERE contact_id = $1`, [contactId])).toEqual([]);
      } finally {
        await settings.setEntitlement({ organization_id: org, followups_enabled: true });
      }
      expect((await create(body(contactId))).status).toBe(201);
    });
  });
});
