import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { AppError } from '@touchpoint/errors';
import { type FlowGraph, type FlowSettings, MessagingEvents, type MessageOutcomeData } from '@touchpoint/contracts';
import { aConnectedSender, ALWAYS_OPEN, consumedCount, createTestWorld, eventually, HOUR, publishEvent, type TestWorld, untilConsumed } from '@touchpoint/testing';
import { UnitOfWork } from '@touchpoint/runtime';
import { FixedClock } from '@touchpoint/time';
import { EffectsService } from '../../apps/followups/src/effects/effects.service.js';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { SendReportsService } from '../../apps/followups/src/effects/send-reports.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
/** Rows as these tests read them (SELECT *): the columns they use typed, every other column `unknown`. */
type EnrollmentRow = Row & { revision: number; next_run_at: Date };
type EffectRow = Row & { id: string; idempotency_key: string; created_at: Date };
/** A command written to the outbox (`messaging.send`, `outbox.cancel`). */
type BusCommand = { payload: { data: Record<string, unknown> & { text?: string } } };
const MINUTE = 60_000;
const edge = (id: string, source: string, target: string, condition: FlowGraph['edges'][number]['condition'] = { type: 'always' }) => ({ id, source, target, condition });
const manual = (extra: Partial<FlowSettings> = {}): FlowSettings => ({ trigger: { kind: 'manual', cancel_on_reply: false }, handoff_policy: 'pause', ...ALWAYS_OPEN, ...extra });

/**
 * The release gates of seed 000 "Release" beyond the basics, against the real database and broker
 * with the loop stopped and a clock the test moves: a reminder past its anchor's grace is skipped,
 * a lost plan stops live enrollments, `last_send.status` learns delivered/read from messaging (in
 * any order), and a send window can be read on the contact's own clock.
 */
describe(`${ReleaseService.name} gates`, () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sut: ReleaseService;
  let flows: FlowsService;
  let enrollments: EnrollmentsService;
  let settings: SettingsService;
  let schema: string;
  const start = new Date('2026-10-06T13:00:00Z'); // Tuesday; 10:00 in São Paulo, 22:00 in Tokyo
  const clock = new FixedClock(start);
  const org = randomUUID();

  beforeAll(async () => {
    world = await createTestWorld('fu_gates');
    app = await startFollowups(world, { clock });
    sut = app.get(ReleaseService);
    flows = app.get(FlowsService);
    enrollments = app.get(EnrollmentsService);
    settings = app.get(SettingsService);
    schema = world.schema('followups');
    await aConnectedSender(world, org, { sender_id: randomUUID() });
  });
  afterAll(() => world.close());
  beforeEach(() => clock.set(start));
  // `releaseOne` takes the oldest due enrollment of any test: end each test's enrollments after it.
  afterEach(() => world.sql(`UPDATE "${schema}".enrollments SET status = 'cancelled', next_run_at = NULL WHERE status <> 'cancelled'`));

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const enrollment = async (id: string) => (await sql<EnrollmentRow>(`SELECT * FROM fu.enrollments WHERE id = $1`, [id]))[0]!;
  const sendEffects = (id: string) => sql<EffectRow>(`SELECT * FROM fu.effects WHERE enrollment_id = $1 AND kind = 'send' ORDER BY step`, [id]);
  const sendCommands = (id: string) => sql<BusCommand>(`SELECT payload FROM fu.outbox_events WHERE type = 'messaging.send' AND event_id LIKE $1 ORDER BY id`, [`followup:${id}:%`]);
  const timeline = async (id: string) => (await sql(`SELECT type, data FROM fu.enrollment_events WHERE enrollment_id = $1 ORDER BY id`, [id])) as { type: string; data: Row }[];

  async function activeFlow(organizationId: string, graph: FlowGraph, flowSettings: FlowSettings): Promise<string> {
    const flow = await flows.create({ organization_id: organizationId, name: `flow ${randomUUID().slice(0, 6)}`, graph, settings: flowSettings });
    const published = await flows.publish({ organization_id: organizationId, flow_id: flow.id, expected_revision: 1 });
    await flows.setStatus({ organization_id: organizationId, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
    return flow.id;
  }

  /** A contact known to followups (messaging's events) that wrote an hour ago, optionally with its own time zone. */
  async function contact(organizationId = org, timeZone?: string): Promise<string> {
    const contactId = randomUUID();
    await publishEvent(world, MessagingEvents.ContactCreated, organizationId, { contact_id: contactId, kind: 'crm', phone: '+5511999990000', tags: [], ...(timeZone ? { time_zone: timeZone } : {}) });
    await publishEvent(
      world,
      MessagingEvents.MessageReceived,
      organizationId,
      { message_id: randomUUID(), conversation_id: randomUUID(), instance_id: randomUUID(), contact_id: contactId, channel: 'whatsapp', direction: 'inbound', external_id: 'wamid.x', text: 'oi', message_type: 'text', auto_reply: false, opt_out: false },
      new Date(clock.now().getTime() - HOUR),
    );
    await eventually(async () => {
      const [row] = await sql(`SELECT last_inbound_at, time_zone FROM fu.contacts WHERE contact_id = $1`, [contactId]);
      return !!row?.last_inbound_at && (timeZone === undefined || row.time_zone === timeZone);
    });
    return contactId;
  }

  const enroll = async (flowId: string, contactId: string, extra: Record<string, unknown> = {}, organizationId = org) => (await enrollments.create({ organization_id: organizationId, flow_id: flowId, contact_id: contactId, operation_key: randomUUID(), ...extra })).enrollment;

  const advanceNow = async (id: string, organizationId = org) => {
    const row = await enrollment(id);
    await enrollments.control({ organization_id: organizationId, enrollment_id: id, expected_revision: row.revision, action: 'advance_now' });
  };

  describe('reminder past its anchor grace (seed 000 "reminder past grace → skip")', () => {
    const reminder = (): [FlowGraph, FlowSettings] => [
      {
        nodes: [
          { id: 't', type: 'trigger', config: {} },
          { id: 'r', type: 'action', config: { mode: 'text', body: 'Lembrete: seu horário é às {{anchor.time}}', anchor_grace_ms: 30 * MINUTE } },
          { id: 'e', type: 'end', config: {} },
        ],
        edges: [edge('e1', 't', 'r'), edge('e2', 'r', 'e')],
      },
      manual(),
    ];

    it('skips the reminder of an appointment three hours past, with the reason on the effect and the timeline, and sends nothing', async () => {
      const flowId = await activeFlow(org, ...reminder());
      const e = await enroll(flowId, await contact(), { anchor_at: new Date(start.getTime() - 3 * HOUR).toISOString() });
      expect(await sut.releaseOne()).toBe('released');
      expect(await enrollment(e.id)).toMatchObject({ status: 'completed' });
      const [effect] = await sendEffects(e.id);
      expect(effect).toMatchObject({ status: 'skipped', reason: 'anchor_past_grace', node_id: 'r' });
      expect(await sendCommands(e.id)).toEqual([]);
      expect(await timeline(e.id)).toContainEqual({ type: 'step_skipped', data: { reason: 'anchor_past_grace' } });
    });

    it.each([
      ['an appointment still ahead', 2 * HOUR],
      ['an appointment started inside the grace', -20 * MINUTE],
    ])('sends the reminder of %s', async (_name, offsetMs) => {
      const flowId = await activeFlow(org, ...reminder());
      const e = await enroll(flowId, await contact(), { anchor_at: new Date(start.getTime() + offsetMs).toISOString() });
      expect(await sut.releaseOne()).toBe('released');
      expect((await sendEffects(e.id))[0]).toMatchObject({ status: 'queued' });
      expect(await sendCommands(e.id)).toHaveLength(1);
    });

    it('skips a reminder tied to an anchor the enrollment does not carry', async () => {
      const [graph] = reminder();
      graph.nodes[1]!.config = { mode: 'text', body: 'Lembrete do seu horário', anchor_grace_ms: 0 };
      const flowId = await activeFlow(org, graph, manual());
      const e = await enroll(flowId, await contact());
      await sut.releaseOne();
      expect((await sendEffects(e.id))[0]).toMatchObject({ status: 'skipped', reason: 'anchor_missing' });
      expect(await sendCommands(e.id)).toEqual([]);
    });

    it('skips a reminder deferred to the send window when the window opens after the grace', async () => {
      // Window 09–18 in São Paulo; 22:00 there now: the reminder waits until 09:00, after the 23:00 appointment.
      clock.set(new Date('2026-10-07T01:00:00Z'));
      const [graph] = reminder();
      const flowId = await activeFlow(org, graph, manual({ send_start_hour: 9, send_end_hour: 18, send_days: [1, 2, 3, 4, 5], timezone: 'America/Sao_Paulo' }));
      const e = await enroll(flowId, await contact(), { anchor_at: '2026-10-07T02:00:00Z' });
      await sut.releaseOne();
      expect((await enrollment(e.id)).next_run_at).toEqual(new Date('2026-10-07T12:00:00Z'));
      clock.set(new Date('2026-10-07T12:00:00Z'));
      await sut.releaseOne();
      expect((await sendEffects(e.id))[0]).toMatchObject({ status: 'skipped', reason: 'anchor_past_grace' });
      expect(await sendCommands(e.id)).toEqual([]);
    });

    it('rejects a send approved after its appointment passed the grace, instead of sending it', async () => {
      const [graph] = reminder();
      const flowId = await activeFlow(org, graph, manual({ require_approval: true }));
      const e = await enroll(flowId, await contact(), { anchor_at: new Date(start.getTime() + HOUR).toISOString() });
      await sut.releaseOne();
      const [waiting] = await sendEffects(e.id);
      expect(waiting).toMatchObject({ status: 'awaiting_decision' });
      clock.advance(2 * HOUR); // the person decides after the appointment
      await app.get(EffectsService).decide({ organization_id: org, effect_id: waiting!.id, approve: true, api_key_id: randomUUID(), member_id: randomUUID() });
      expect(await sut.releaseOne()).toBe('released');
      expect(await sendEffects(e.id)).toEqual([expect.objectContaining({ id: waiting!.id, status: 'rejected', reason: 'anchor_past_grace' })]);
      expect(await enrollment(e.id)).toMatchObject({ status: 'completed', failures: 0 });
      expect(await sendCommands(e.id)).toEqual([]);
    });

    it('refuses a grace that is not a whole, bounded number of ms at publish', async () => {
      const [graph] = reminder();
      graph.nodes[1]!.config = { mode: 'text', body: 'x', anchor_grace_ms: -1 };
      const flow = await flows.create({ organization_id: org, name: 'bad grace', graph, settings: manual() });
      const refused = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 }).catch((err: AppError) => err);
      expect(refused).toBeInstanceOf(AppError);
      expect((refused as AppError).details).toMatchObject({ validation_errors: expect.arrayContaining([expect.objectContaining({ node_id: 'r', code: 'invalid_config' })]) });
    });
  });

  describe('plan lost (seed 000 "plan lost → stop")', () => {
    it("stops a live enrollment at its next release once the organization's entitlement is off, and refuses new ones", async () => {
      const other = randomUUID();
      const flowId = await activeFlow(
        other,
        {
          nodes: [
            { id: 't', type: 'trigger', config: {} },
            { id: 'w', type: 'wait', config: { mode: 'fixed', duration_ms: HOUR } },
            { id: 'a', type: 'action', config: { mode: 'text', body: 'Oi' } },
            { id: 'e', type: 'end', config: {} },
          ],
          edges: [edge('e1', 't', 'w'), edge('e2', 'w', 'a'), edge('e3', 'a', 'e')],
        },
        manual(),
      );
      const contactId = await contact(other);
      const e = await enroll(flowId, contactId, {}, other);
      expect(e.status).toBe('active');

      const off = await settings.setEntitlement({ organization_id: other, followups_enabled: false });
      expect(off).toMatchObject({ followups_enabled: false, revision: 1 });
      // Nothing happens before the enrollment's next release…
      expect(await enrollment(e.id)).toMatchObject({ status: 'active' });
      await advanceNow(e.id, other);
      expect(await sut.releaseOne()).toBe('released');
      // …which stops it with the reason, sending nothing.
      expect(await enrollment(e.id)).toMatchObject({ status: 'cancelled', reason: 'plan_lost', next_run_at: null });
      expect(await sendCommands(e.id)).toEqual([]);
      expect(await timeline(e.id)).toContainEqual({ type: 'stopped', data: { reason: 'plan_lost' } });
      const [finished] = await sql<BusCommand>(`SELECT payload FROM fu.outbox_events WHERE type = 'followups.enrollment.finished' AND event_id = $1`, [`followups.enrollment.finished:${e.id}`]);
      expect(finished?.payload.data).toMatchObject({ status: 'cancelled', reason: 'plan_lost' });

      const refused = await enroll(flowId, await contact(other), {}, other).catch((err: AppError) => err);
      expect(refused).toBeInstanceOf(AppError);
      expect(refused).toMatchObject({ code: 'conflict', details: { reason: 'plan_lost' } });

      // A settings save by an agents:write client never touches the entitlement.
      const saved = await settings.update({ organization_id: other, expected_revision: 1, retention_days: 30 });
      expect(saved).toMatchObject({ followups_enabled: false, retention_days: 30 });
      expect(await settings.setEntitlement({ organization_id: other, followups_enabled: true })).toMatchObject({ followups_enabled: true, retention_days: 30 });
      expect((await enroll(flowId, await contact(other), {}, other)).status).toBe('active');
    });
  });

  /** trigger → text → wait 1 h → condition last_send.status = read → end `read_it` | text → end `nudged`. */
  const onlyIfNotReadGraph = (): [FlowGraph, FlowSettings] => [
    {
      nodes: [
        { id: 't', type: 'trigger', config: {} },
        { id: 'a1', type: 'action', config: { mode: 'text', body: 'Segue a proposta' } },
        { id: 'w', type: 'wait', config: { mode: 'fixed', duration_ms: HOUR } },
        { id: 'c', type: 'condition', config: { match: 'all', rules: [{ field: 'last_send.status', op: 'eq', value: 'read' }] } },
        { id: 'done', type: 'end', config: { outcome: 'read_it' } },
        { id: 'a2', type: 'action', config: { mode: 'text', body: 'Conseguiu ver?' } },
        { id: 'nudged', type: 'end', config: { outcome: 'nudged' } },
      ],
      edges: [edge('e1', 't', 'a1'), edge('e2', 'a1', 'w'), edge('e3', 'w', 'c'), edge('e4', 'c', 'done', { type: 'cond_result', value: true }), edge('e5', 'c', 'a2', { type: 'cond_result', value: false }), edge('e6', 'a2', 'nudged')],
    },
    manual(),
  ];

  describe('"only if not read": last_send.status learns delivered and read', () => {
    const onlyIfNotRead = onlyIfNotReadGraph;

    /** Publishes messaging's report about a follow-up send, as messaging does. */
    async function report(type: string, key: string, contactId: string, statusAt: Date, status: MessageOutcomeData['status']): Promise<string> {
      const data: MessageOutcomeData = { message_id: randomUUID(), conversation_id: randomUUID(), contact_id: contactId, channel: 'whatsapp', idempotency_key: key, requester: 'followups', status, provider_message_id: 'wamid.f', status_at: statusAt.toISOString() };
      return (await publishEvent(world, type, org, data)).event_id;
    }
    const handled = async (eventId: string) => (await sql(`SELECT 1 FROM fu.inbox_events WHERE event_id = $1`, [eventId])).length > 0;

    it('a read reported before its delivered (and a late sent) leaves the send read: the condition takes the read branch and nothing more is sent', async () => {
      const contactId = await contact();
      const e = await enroll(await activeFlow(org, ...onlyIfNotRead()), contactId);
      await sut.releaseOne();
      const [sent] = await sendEffects(e.id);
      expect(sent).toMatchObject({ status: 'queued', read_at: null, delivered_at: null });

      const readAt = new Date(start.getTime() + 5 * MINUTE);
      const deliveredAt = new Date(start.getTime() + 2 * MINUTE);
      await report(MessagingEvents.MessageRead, sent!.idempotency_key, contactId, readAt, 'read');
      await eventually(async () => (await sendEffects(e.id))[0]!.read_at !== null);
      const late = [await report(MessagingEvents.MessageDelivered, sent!.idempotency_key, contactId, deliveredAt, 'delivered'), await report(MessagingEvents.MessageSent, sent!.idempotency_key, contactId, start, 'sent')];
      await eventually(async () => (await Promise.all(late.map(handled))).every(Boolean));

      const [effect] = await sendEffects(e.id);
      expect(effect).toMatchObject({ status: 'sent', read_at: readAt, delivered_at: deliveredAt });
      expect(await enrollment(e.id)).toMatchObject({ last_send_status: 'read', inflight_effect_id: null });
      const detail = await enrollments.get({ organization_id: org, enrollment_id: e.id });
      expect(detail.effects.find((x) => x.kind === 'send')).toMatchObject({ delivery_status: 'read', read_at: readAt.toISOString(), delivered_at: deliveredAt.toISOString() });
      expect((await timeline(e.id)).map((t) => t.type)).toEqual(expect.arrayContaining(['send_sent', 'send_read', 'send_delivered']));

      await advanceNow(e.id);
      await sut.releaseOne();
      expect(await enrollment(e.id)).toMatchObject({ status: 'completed', reason: 'read_it' });
      expect(await sendCommands(e.id)).toHaveLength(1);
    });

    it('a send only delivered is not read: the follow-up goes out', async () => {
      const contactId = await contact();
      const e = await enroll(await activeFlow(org, ...onlyIfNotRead()), contactId);
      await sut.releaseOne();
      const [sent] = await sendEffects(e.id);
      await report(MessagingEvents.MessageSent, sent!.idempotency_key, contactId, start, 'sent');
      await report(MessagingEvents.MessageDelivered, sent!.idempotency_key, contactId, new Date(start.getTime() + MINUTE), 'delivered');
      await eventually(async () => (await enrollment(e.id)).last_send_status === 'delivered');

      await advanceNow(e.id);
      await sut.releaseOne(); // condition false → the second text (queued)
      await sut.releaseOne();
      expect(await sendCommands(e.id)).toHaveLength(2);
      expect((await sendEffects(e.id))[1]).toMatchObject({ node_id: 'a2', status: 'queued' });
    });

    it('a late read of an older send does not speak for the newest one', async () => {
      const contactId = await contact();
      const e = await enroll(await activeFlow(org, ...onlyIfNotRead()), contactId);
      await sut.releaseOne();
      await report(MessagingEvents.MessageSent, (await sendEffects(e.id))[0]!.idempotency_key, contactId, start, 'sent');
      await eventually(async () => (await enrollment(e.id)).last_send_status === 'sent');
      await advanceNow(e.id);
      await sut.releaseOne();
      const [first, second] = await sendEffects(e.id);
      expect(second).toMatchObject({ node_id: 'a2', status: 'queued' });
      await report(MessagingEvents.MessageRead, first!.idempotency_key, contactId, new Date(start.getTime() + MINUTE), 'read');
      await eventually(async () => (await sendEffects(e.id))[0]!.read_at !== null);
      expect(await enrollment(e.id)).toMatchObject({ last_send_status: 'queued', inflight_effect_id: second!.id });
    });

    it("skips a report about a message another service asked for (the handler's `when`): no inbox row, no transaction, counted skipped; followups' own is handled", async () => {
      const handler = 'DeliveryStatusesConsumer.onRead';
      const contactId = await contact();
      const e = await enroll(await activeFlow(org, ...onlyIfNotRead()), contactId);
      await sut.releaseOne();
      const [sent] = await sendEffects(e.id);
      const before = { skipped: await consumedCount(app, handler, 'skipped'), handled: await consumedCount(app, handler, 'handled') };
      const inbox = (eventId: string) => sql(`SELECT handler FROM fu.inbox_events WHERE event_id = $1`, [eventId]);

      // Another requester's read, even with this send's key: not followups' business.
      const theirs: MessageOutcomeData = {
        message_id: randomUUID(),
        conversation_id: randomUUID(),
        contact_id: contactId,
        channel: 'whatsapp',
        idempotency_key: sent!.idempotency_key,
        requester: 'outreach',
        status: 'read',
        provider_message_id: 'wamid.o',
        status_at: start.toISOString(),
      };
      const skipped = (await publishEvent(world, MessagingEvents.MessageRead, org, theirs)).event_id;
      // Barrier: the skip is counted once the consumer has taken and judged the message.
      await untilConsumed(app, handler, 'skipped', before.skipped + 1);
      expect(await inbox(skipped)).toEqual([]);
      expect((await sendEffects(e.id))[0]).toMatchObject({ read_at: null });

      const ours = await report(MessagingEvents.MessageRead, sent!.idempotency_key, contactId, new Date(start.getTime() + MINUTE), 'read');
      await eventually(() => handled(ours));
      expect(await inbox(ours)).toEqual([{ handler }]);
      expect((await sendEffects(e.id))[0]!.read_at).not.toBeNull();
      expect(await consumedCount(app, handler, 'handled')).toBe(before.handled + 1);
      expect(await consumedCount(app, handler, 'skipped')).toBe(before.skipped + 1);
    });
  });

  describe('a consumer batch of send reports', () => {
    it('applies outcomes and delivery reports of several sends, in any order and repeated, in one transaction as one by one: read wins, nothing is revived', async () => {
      const flowId = await activeFlow(org, ...onlyIfNotReadGraph());
      const [a, b] = [await enroll(flowId, await contact()), await enroll(flowId, await contact())];
      await sut.releaseOne();
      await sut.releaseOne();
      const [sentA] = await sendEffects(a.id);
      const [sentB] = await sendEffects(b.id);
      const at = (minutes: number) => new Date(start.getTime() + minutes * MINUTE);
      const messageId = randomUUID();
      const reports = app.get(SendReportsService);
      const base = { organizationId: org, messageId };
      const changed = await app.get(UnitOfWork).run(async (tx) => {
        // A: read before delivered, a repeated read, the dispatcher's sent after both, then a stale failure.
        reports.applyLater(tx, { ...base, kind: 'delivery', key: sentA!.idempotency_key, report: 'read', at: at(5) });
        reports.applyLater(tx, { ...base, kind: 'delivery', key: sentA!.idempotency_key, report: 'delivered', at: at(2) });
        reports.applyLater(tx, { ...base, kind: 'delivery', key: sentA!.idempotency_key, report: 'read', at: at(6) });
        reports.applyLater(tx, { ...base, kind: 'outcome', key: sentA!.idempotency_key, outcome: 'sent', at: at(1) });
        // B: sent, then delivered; a failure after the delivery does not undo it.
        reports.applyLater(tx, { organizationId: org, kind: 'outcome', key: sentB!.idempotency_key, outcome: 'sent', at: at(1) });
        reports.applyLater(tx, { organizationId: org, kind: 'delivery', key: sentB!.idempotency_key, report: 'delivered', at: at(3) });
        // Another organization's report of A's key touches nothing.
        return reports.apply(tx, [
          { organizationId: randomUUID(), kind: 'delivery', key: sentA!.idempotency_key, report: 'read', at: at(7) },
          { organizationId: org, kind: 'outcome', key: sentB!.idempotency_key, outcome: 'failed', errorCode: '131026', at: at(4) },
        ]);
      });
      expect(changed).toEqual([false, false]);
      expect((await sendEffects(a.id))[0]).toMatchObject({ status: 'sent', read_at: at(5), delivered_at: at(2), message_id: messageId, reason: null });
      expect(await enrollment(a.id)).toMatchObject({ last_send_status: 'read', inflight_effect_id: null });
      expect((await timeline(a.id)).filter((t) => t.type.startsWith('send_')).map((t) => t.type)).toEqual(['send_sent', 'send_read', 'send_delivered']);
      expect((await sendEffects(b.id))[0]).toMatchObject({ status: 'sent', delivered_at: at(3), read_at: null, reason: null });
      expect(await enrollment(b.id)).toMatchObject({ last_send_status: 'delivered', inflight_effect_id: null });
      expect((await timeline(b.id)).filter((t) => t.type.startsWith('send_')).map((t) => t.type)).toEqual(['send_sent', 'send_delivered']);
    });
  });

  describe("quiet hours in the contact's time zone", () => {
    // 09–18 on weekdays in São Paulo: open there now (Tuesday 10:00), closed in Tokyo (22:00).
    const windowSettings = (mode?: 'flow' | 'contact') => manual({ send_start_hour: 9, send_end_hour: 18, send_days: [1, 2, 3, 4, 5], timezone: 'America/Sao_Paulo', ...(mode ? { timezone_mode: mode } : {}) });
    const oneText = (): FlowGraph => ({
      nodes: [
        { id: 't', type: 'trigger', config: {} },
        { id: 'a', type: 'action', config: { mode: 'text', body: 'Oi às {{anchor.time}}' } },
        { id: 'e', type: 'end', config: {} },
      ],
      edges: [edge('e1', 't', 'a'), edge('e2', 'a', 'e')],
    });
    const anchor = { anchor_at: '2026-10-08T12:00:00Z' };

    it('defers a send to the opening of the window in the contact’s zone, and renders the anchor on that clock', async () => {
      const flowId = await activeFlow(org, oneText(), windowSettings('contact'));
      const e = await enroll(flowId, await contact(org, 'Asia/Tokyo'), anchor);
      await sut.releaseOne();
      // Wednesday 09:00 in Tokyo.
      expect(await enrollment(e.id)).toMatchObject({ status: 'active', next_run_at: new Date('2026-10-07T00:00:00Z') });
      expect(await sendCommands(e.id)).toEqual([]);
      const [plan] = await sql(`SELECT reason, usage FROM fu.effects WHERE enrollment_id = $1 AND kind = 'schedule_plan'`, [e.id]);
      expect(plan).toMatchObject({ reason: 'send_window', usage: { planned_at: '2026-10-07T00:00:00.000Z' } });

      clock.set(new Date('2026-10-07T00:00:00Z'));
      await sut.releaseOne();
      const [command] = await sendCommands(e.id);
      expect(command?.payload.data.text).toBe('Oi às 21:00');
    });

    it.each([
      ['a contact without a time zone in contact mode (the flow’s zone)', 'contact' as const, undefined, 'Oi às 09:00'],
      ['a contact in Tokyo when the flow reads its own zone', 'flow' as const, 'Asia/Tokyo', 'Oi às 09:00'],
      ['a contact in Tokyo when the flow sets no mode (default flow)', undefined, 'Asia/Tokyo', 'Oi às 09:00'],
    ])('sends now for %s', async (_name, mode, zone, text) => {
      const flowId = await activeFlow(org, oneText(), windowSettings(mode));
      const e = await enroll(flowId, await contact(org, zone), anchor);
      await sut.releaseOne();
      const [command] = await sendCommands(e.id);
      expect(command?.payload.data.text).toBe(text);
    });

    it('is DST-correct on the contact’s clock: the Monday opening after New York falls back is 09:00 EST', async () => {
      clock.set(new Date('2026-10-31T23:00:00Z')); // Saturday 19:00 in New York (EDT); clocks go back on Sunday
      const flowId = await activeFlow(org, oneText(), manual({ send_start_hour: 9, send_end_hour: 18, send_days: [1, 2, 3, 4, 5], timezone: 'UTC', timezone_mode: 'contact' }));
      const e = await enroll(flowId, await contact(org, 'America/New_York'), anchor);
      await sut.releaseOne();
      expect((await enrollment(e.id)).next_run_at).toEqual(new Date('2026-11-02T14:00:00Z'));
    });

    it('refuses an unknown timezone_mode in the flow settings', async () => {
      await expect(flows.create({ organization_id: org, name: 'bad mode', graph: oneText(), settings: { ...windowSettings(), timezone_mode: 'recipient' as never } })).rejects.toMatchObject({ code: 'validation_failed' });
    });
  });
});
