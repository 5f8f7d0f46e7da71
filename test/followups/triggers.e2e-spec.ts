import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { CrmEvents, type FlowGraph, type FlowSettings, MessagingEvents, MessagingRpc, OutboxEvents } from '@touchpoint/contracts';
import { Metrics } from '@touchpoint/observability';
import { RpcClient } from '@touchpoint/runtime';
import { ALWAYS_OPEN, anActiveFlow, aWaitingFlow, createTestWorld, duplicateCounts, eventually, HOUR, publishEvent, type TestWorld, untilHandled, untilRedeliveryDiscarded, aMessageReceived } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import { TriggersService } from '../../apps/followups/src/rules/triggers.service.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
/** A trigger row as these tests read it (SELECT *): the columns they use typed, the rest `unknown`. */
type TriggerRow = Row & { event_id: string; data: { text?: string; tag?: string }; outcome: { enrolled: unknown[] }; next_attempt_at: Date };
/** What messaging answers to a contact create or get (either enveloped in `data` or not). */
type ContactAnswer = { contact_id: string; id: string; tags: string[]; data?: { contact_id: string; id: string; tags: string[] } };

/**
 * Rule triggers (seed 000 "Rules"): every trigger kind recorded in its event's transaction when a
 * rule listens, claimed in batches, matched (filter, segment SQL) and enrolled once per event —
 * also when the event is delivered twice or the trigger processed again; business rejections are
 * counted; faults retry and are given up after 5 attempts; a tag added by a step fires nothing.
 */
describe('Follow-up rule triggers', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let flows: FlowsService;
  let triggers: TriggersService;
  let schema: string;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));

  beforeAll(async () => {
    world = await createTestWorld('fu_triggers');
    await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
    followups = await startFollowups(world, { clock });
    flows = followups.get(FlowsService);
    triggers = followups.get(TriggersService);
    schema = world.schema('followups');
  });
  afterAll(() => world.close());

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const enrollmentsOf = (flowId: string) => sql(`SELECT * FROM fu.enrollments WHERE flow_id = $1`, [flowId]);
  const triggersOf = (org: string) => sql<TriggerRow>(`SELECT * FROM fu.triggers WHERE organization_id = $1 ORDER BY id`, [org]);

  // Not a send: rules that start outside a conversation would need a template to publish.
  const ruleFlow = (trigger: FlowSettings['trigger']): [FlowGraph, FlowSettings] => {
    const { graph, settings } = aWaitingFlow(trigger);
    return [graph, settings];
  };

  const activeFlow = (org: string, graph: FlowGraph, settings: FlowSettings) => anActiveFlow(flows, org, { name: `rule ${randomUUID().slice(0, 6)}`, graph, settings });

  const conversationId = randomUUID();
  const cases: { kind: string; filter: Record<string, unknown>; miss: Record<string, unknown>; type: string; data: (contactId: string) => object }[] = [
    { kind: 'contact_created', filter: {}, miss: { segment: { match: 'all', rules: [{ field: 'contact.tags', op: 'contains', value: 'never' }] } }, type: MessagingEvents.ContactCreated, data: (c) => ({ contact_id: c, kind: 'crm', phone: '+5592988880000', tags: ['novo'] }) },
    { kind: 'tag_added', filter: { tag: 'vip' }, miss: { tag: 'other' }, type: MessagingEvents.ContactTagged, data: (c) => ({ contact_id: c, tags: ['vip'], all_tags: ['vip'] }) },
    { kind: 'lead_created', filter: {}, miss: { segment: { match: 'all', rules: [{ field: 'contact.email', op: 'exists' }] } }, type: CrmEvents.LeadCreated, data: (c) => ({ lead_id: randomUUID(), contact_id: c, status: 'new' }) },
    { kind: 'lead_status_changed', filter: { status: 'qualified' }, miss: { status: 'lost' }, type: CrmEvents.LeadStatusChanged, data: (c) => ({ lead_id: randomUUID(), contact_id: c, status: 'qualified', previous_status: 'new' }) },
    { kind: 'deal_stage_changed', filter: { stage_id: 'proposal' }, miss: { stage_id: 'won' }, type: CrmEvents.DealStageChanged, data: (c) => ({ deal_id: randomUUID(), contact_id: c, stage_id: 'proposal', previous_stage_id: 'lead' }) },
    {
      kind: 'inbound_keyword',
      filter: { keywords: ['preço'] },
      miss: { keywords: ['cancelar'] },
      type: MessagingEvents.MessageReceived,
      data: (c) => aMessageReceived(c, { conversation_id: conversationId, external_id: 'wamid.k', text: 'Qual o PRECO da cadeira?' }),
    },
    {
      kind: 'conversation_resolved',
      filter: {},
      miss: { segment: { match: 'any', rules: [{ field: 'contact.fields.score', op: 'gt', value: 10 }] } },
      type: MessagingEvents.ConversationResolved,
      data: (c) => ({ conversation_id: conversationId, contact_id: c, channel: 'whatsapp', resolved_by: null }),
    },
  ];

  it.each(cases)('$kind enrolls exactly once per event, also when the event is delivered twice and the trigger processed again', async ({ kind, filter, miss, type, data }) => {
    const org = randomUUID();
    const contactId = randomUUID();
    const flowId = await activeFlow(org, ...ruleFlow({ kind: kind as never, cancel_on_reply: false, ...filter }));
    const missId = await activeFlow(org, ...ruleFlow({ kind: kind as never, cancel_on_reply: false, ...miss }));
    const before = await duplicateCounts(followups);
    const event = await publishEvent(world, type, org, data(contactId), clock.now(), 2);

    await untilRedeliveryDiscarded(world, followups, 'followups', event.event_id, before);
    expect(await triggersOf(org)).toHaveLength(1);
    const [recorded] = await triggersOf(org);
    expect(recorded).toMatchObject({ type: kind, contact_id: contactId, processed_at: null });
    expect(recorded.event_id.startsWith(event.event_id)).toBe(true);

    expect(await triggers.processBatch()).toBeGreaterThanOrEqual(1);
    const enrolled = await enrollmentsOf(flowId);
    expect(enrolled).toHaveLength(1);
    expect(enrolled[0]).toMatchObject({ contact_id: contactId, status: 'active', node_id: 'w' });
    expect(await enrollmentsOf(missId)).toEqual([]);
    const [processed] = await triggersOf(org);
    expect(processed.processed_at).not.toBeNull();
    expect(processed.outcome).toMatchObject({ rules: 2, enrolled: [enrolled[0].id], no_match: 1 });

    // Processed again (a crash after the enrollment, before the row was marked): still one enrollment.
    await sql(`UPDATE fu.triggers SET processed_at = NULL WHERE id = $1`, [processed.id]);
    await triggers.processBatch();
    expect(await enrollmentsOf(flowId)).toHaveLength(1);
  });

  it('records nothing when no enabled rule listens for the kind', async () => {
    const org = randomUUID();
    await activeFlow(org, ...ruleFlow({ kind: 'lead_created', cancel_on_reply: false }));
    await publishEvent(world, CrmEvents.DealStageChanged, org, { deal_id: randomUUID(), contact_id: randomUUID(), stage_id: 'proposal' });
    const marker = await publishEvent(world, CrmEvents.LeadCreated, org, { lead_id: randomUUID(), contact_id: randomUUID() });
    await eventually(async () => (await triggersOf(org)).length === 1);
    expect((await triggersOf(org)).map((t) => t.event_id)).toEqual([marker.event_id]);
  });

  it('records a 4,096-character reply that ends in an emoji whole, and the reply still stops its enrollment', async () => {
    const org = randomUUID();
    const contactId = randomUUID();
    await activeFlow(org, ...ruleFlow({ kind: 'inbound_keyword', cancel_on_reply: false, keywords: ['preço'] }));
    const stopsOnReply = await activeFlow(org, ...ruleFlow({ kind: 'manual', cancel_on_reply: true }));
    const { enrollment } = await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: stopsOnReply, contact_id: contactId, operation_key: randomUUID() });
    expect(enrollment).toMatchObject({ status: 'active', node_id: 'w' });
    // 4,096 code points, 4,097 UTF-16 units: a cut at 4,096 units would keep half of the emoji.
    const text = `${'a'.repeat(4095)}\u{1F600}`;

    const reply = await publishEvent(world, MessagingEvents.MessageReceived, org, aMessageReceived(contactId, { external_id: `wamid.${randomUUID()}`, text }), new Date(clock.now().getTime() + 1000));

    await eventually(async () => (await triggersOf(org)).length === 1);
    const [recorded] = await triggersOf(org);
    expect(recorded).toMatchObject({ type: 'inbound_keyword', contact_id: contactId, event_id: reply.event_id });
    expect(recorded.data.text).toBe(text);
    const [stopped] = await sql(`SELECT status, reason FROM fu.enrollments WHERE id = $1`, [enrollment.id]);
    expect(stopped).toEqual({ status: 'completed', reason: 'replied' });
  });

  it('a rule switched on is seen before the 30 s cache expires: the flow status event invalidates it', async () => {
    const org = randomUUID();
    await activeFlow(org, ...ruleFlow({ kind: 'lead_created', cancel_on_reply: false }));
    // This fills the organization's cache with {lead_created}: the deal event records nothing.
    await publishEvent(world, CrmEvents.DealStageChanged, org, { deal_id: randomUUID(), contact_id: randomUUID(), stage_id: 'proposal' });
    const marker = await publishEvent(world, CrmEvents.LeadCreated, org, { lead_id: randomUUID(), contact_id: randomUUID() });
    await eventually(async () => (await triggersOf(org)).some((t) => t.event_id === marker.event_id));
    expect(await triggersOf(org)).toHaveLength(1);

    await activeFlow(org, ...ruleFlow({ kind: 'deal_stage_changed', cancel_on_reply: false }));
    const started = Date.now();
    await eventually(async () => {
      const deal = await publishEvent(world, CrmEvents.DealStageChanged, org, { deal_id: randomUUID(), contact_id: randomUUID(), stage_id: 'proposal' });
      await untilHandled(world, 'followups', deal.event_id);
      return (await triggersOf(org)).some((t) => t.type === 'deal_stage_changed');
    }, 15_000);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('counts a business rejection (already enrolled) and gives a failing trigger up after 5 attempts with backoff', async () => {
    const org = randomUUID();
    const contactId = randomUUID();
    const flowId = await activeFlow(org, ...ruleFlow({ kind: 'lead_created', cancel_on_reply: false }));
    await publishEvent(world, CrmEvents.LeadCreated, org, { lead_id: randomUUID(), contact_id: contactId });
    await publishEvent(world, CrmEvents.LeadCreated, org, { lead_id: randomUUID(), contact_id: contactId });
    await eventually(async () => (await triggersOf(org)).length === 2);
    await triggers.processBatch();
    const [first, second] = await triggersOf(org);
    expect(first.outcome.enrolled).toHaveLength(1);
    expect(second.outcome).toMatchObject({ enrolled: [], rejected: { already_enrolled: 1 } });
    expect(await enrollmentsOf(flowId)).toHaveLength(1);

    // A fault (not a business rejection): every enrollment insert fails.
    const other = randomUUID();
    await publishEvent(world, CrmEvents.LeadCreated, org, { lead_id: randomUUID(), contact_id: other });
    await eventually(async () => (await triggersOf(org)).length === 3);
    await sql(`CREATE FUNCTION fu.fail_enroll() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'enrollments on fire'; END $$`);
    await sql(`CREATE TRIGGER fail_enroll BEFORE INSERT ON fu.enrollments FOR EACH ROW EXECUTE FUNCTION fu.fail_enroll()`);
    try {
      for (let attempt = 1; attempt <= 5; attempt++) {
        await triggers.processBatch();
        const failing = (await triggersOf(org))[2];
        expect(failing.attempts).toBe(attempt);
        expect(failing.last_error).toContain('enrollments on fire');
        if (attempt < 5) {
          expect(failing.processed_at).toBeNull();
          expect(failing.next_attempt_at.getTime()).toBe(clock.now().getTime() + 30_000 * 2 ** (attempt - 1));
          // Not due before its backoff.
          expect(await triggers.processBatch()).toBe(0);
          clock.advance(30_000 * 2 ** (attempt - 1));
        } else {
          expect(failing.processed_at).not.toBeNull();
          expect(failing.outcome).toEqual({ given_up: true });
        }
      }
    } finally {
      await sql(`DROP TRIGGER fail_enroll ON fu.enrollments`);
      await sql(`DROP FUNCTION fu.fail_enroll()`);
    }
    expect(await triggers.processBatch()).toBe(0);
    expect(await sql(`SELECT 1 FROM fu.enrollments WHERE contact_id = $1`, [other])).toEqual([]);
    const counter = await followups.get(Metrics).registry.getSingleMetricAsString('touchpoint_followup_triggers_total');
    expect(counter).toContain('touchpoint_followup_triggers_total{type="lead_created",outcome="failed",service="followups"} 1');
    expect(counter).toContain('touchpoint_followup_triggers_total{type="lead_created",outcome="retry",service="followups"} 4');
    expect(counter).toMatch(/touchpoint_followup_triggers_total\{type="lead_created",outcome="rejected",service="followups"\} 1/);
  });

  it('a tag added by a follow-up step fires no rule; the same contact tagged from elsewhere does', async () => {
    const org = randomUUID();
    const sender = randomUUID();
    await publishEvent(world, OutboxEvents.SenderConnected, org, { sender_id: sender, channel: 'whatsapp', is_default: true, status: 'connected' });
    const rpc = followups.get(RpcClient);
    const created = await rpc.callUnchecked<ContactAnswer>('messaging', MessagingRpc.ContactCreate, { organization_id: org, name: 'Ana', phone: '+5592988881234' });
    const contactId = (created.data ?? created).contact_id ?? (created.data ?? created).id;
    await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);

    const onStepTag = await activeFlow(org, ...ruleFlow({ kind: 'tag_added', cancel_on_reply: false, tag: 'vip' }));
    const onOtherTag = await activeFlow(org, ...ruleFlow({ kind: 'tag_added', cancel_on_reply: false, tag: 'indicado' }));
    const tagger = await activeFlow(
      org,
      {
        nodes: [
          { id: 't', type: 'trigger', config: {} },
          { id: 'tag', type: 'action', config: { mode: 'tag', tags: ['vip'] } },
          { id: 'e', type: 'end', config: {} },
        ],
        edges: [
          { id: 'e1', source: 't', target: 'tag', condition: { type: 'always' } },
          { id: 'e2', source: 'tag', target: 'e', condition: { type: 'always' } },
        ],
      },
      { trigger: { kind: 'manual', cancel_on_reply: false }, handoff_policy: 'pause', ...ALWAYS_OPEN },
    );
    const { enrollment } = await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: tagger, contact_id: contactId, operation_key: randomUUID() });
    const release = followups.get(ReleaseService);
    for (let i = 0; i < 10 && (await sql(`SELECT status FROM fu.enrollments WHERE id = $1`, [enrollment.id]))[0].status === 'active'; i++) await release.releaseOne();
    expect((await sql(`SELECT status FROM fu.enrollments WHERE id = $1`, [enrollment.id]))[0].status).toBe('completed');

    // messaging tagged the contact and told us; our read model has the tag, and no trigger was recorded.
    const messagingContact = await rpc.callUnchecked<ContactAnswer>('messaging', MessagingRpc.ContactGet, { organization_id: org, contact_id: contactId });
    expect((messagingContact.data ?? messagingContact).tags).toContain('vip');
    // Barrier: followups has handled the step's own tag event, so any trigger it would record is committed.
    const [stepTagged] = await eventually(async () => {
      const rows = await world.sql<{ event_id: string }>(`SELECT event_id FROM "${world.schema('messaging')}".outbox_events WHERE type = $1 AND payload->'data'->>'contact_id' = $2 AND payload->'data'->'tags' ? 'vip'`, [MessagingEvents.ContactTagged, contactId]);
      return rows.length ? rows : null;
    });
    await untilHandled(world, 'followups', stepTagged!.event_id);
    // A tag from elsewhere records its trigger (so the rule does listen).
    await rpc.call('messaging', MessagingRpc.ContactTag, { organization_id: org, contact_id: contactId, tags: ['indicado'], source: 'api' });
    await eventually(async () => (await triggersOf(org)).some((t) => t.data.tag === 'indicado'));
    expect((await triggersOf(org)).map((t) => t.data.tag)).toEqual(['indicado']);
    await triggers.processBatch();
    expect(await enrollmentsOf(onStepTag)).toEqual([]);
    expect(await enrollmentsOf(onOtherTag)).toHaveLength(1);
  });

  it("keeps the newest tag list when messaging's tag events arrive out of order", async () => {
    const org = randomUUID();
    const contactId = randomUUID();
    const base = Date.now();
    const newer = await publishEvent(world, MessagingEvents.ContactTagged, org, { contact_id: contactId, tags: ['b'], all_tags: ['a', 'b'] }, new Date(base + 2000));
    await eventually(async () => (await sql(`SELECT 1 FROM fu.inbox_events WHERE event_id = $1`, [newer.event_id])).length > 0);
    const older = await publishEvent(world, MessagingEvents.ContactTagged, org, { contact_id: contactId, tags: ['a'], all_tags: ['a'] }, new Date(base + 1000));
    await eventually(async () => (await sql(`SELECT 1 FROM fu.inbox_events WHERE event_id = $1`, [older.event_id])).length > 0);
    const [contact] = await sql(`SELECT tags, tags_at FROM fu.contacts WHERE organization_id = $1 AND contact_id = $2`, [org, contactId]);
    expect(contact).toEqual({ tags: ['a', 'b'], tags_at: new Date(base + 2000) });
  });

  describe("release steps that change a contact's tags", () => {
    /** An organization with a connected sender, and a contact known to messaging and to followups who wrote an hour ago. */
    async function contactOf(org: string, tags: string[] = []): Promise<string> {
      await publishEvent(world, OutboxEvents.SenderConnected, org, { sender_id: randomUUID(), channel: 'whatsapp', is_default: true, status: 'connected' });
      const rpc = followups.get(RpcClient);
      const created = await rpc.callUnchecked<ContactAnswer>('messaging', MessagingRpc.ContactCreate, { organization_id: org, name: 'Ana', phone: `+55929${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}` });
      const contactId = (created.data ?? created).contact_id ?? (created.data ?? created).id;
      await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);
      await eventually(async () => (await sql(`SELECT 1 FROM fu.senders WHERE organization_id = $1`, [org])).length === 1);
      await sql(`UPDATE fu.contacts SET tags = $2, last_inbound_at = $3 WHERE contact_id = $1`, [contactId, tags, new Date(clock.now().getTime() - HOUR)]);
      return contactId;
    }
    const oneAction = (id: string, config: Record<string, unknown>): [FlowGraph, FlowSettings] => [
      {
        nodes: [{ id: 't', type: 'trigger', config: {} }, { id, type: 'action', config } as FlowGraph['nodes'][number], { id: 'e', type: 'end', config: {} }],
        edges: [
          { id: 'e1', source: 't', target: id, condition: { type: 'always' } },
          { id: 'e2', source: id, target: 'e', condition: { type: 'always' } },
        ],
      },
      { trigger: { kind: 'manual', cancel_on_reply: false }, handoff_policy: 'pause', ...ALWAYS_OPEN },
    ];
    const enroll = async (org: string, flowId: string, contactId: string) => (await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID() })).enrollment.id;

    it('a send after an untag of the same contact in one batch checks consent against the tags the untag left', async () => {
      const org = randomUUID();
      const settings = followups.get(SettingsService);
      await settings.update({ organization_id: org, expected_revision: (await settings.get(org)).revision, consent_mode: 'all_opt_in', consent_tag: 'opt_in' });
      const contactId = await contactOf(org, ['opt_in']);
      const untag = await enroll(org, await activeFlow(org, ...oneAction('untag', { mode: 'untag', tags: ['opt_in'] })), contactId);
      const send = await enroll(org, await activeFlow(org, ...oneAction('send', { mode: 'text', body: 'Promo' })), contactId);
      await sql(`UPDATE fu.enrollments SET next_run_at = $2 WHERE id = $1`, [untag, new Date(clock.now().getTime() - 2000)]);
      await sql(`UPDATE fu.enrollments SET next_run_at = $2 WHERE id = $1`, [send, new Date(clock.now().getTime() - 1000)]);

      await followups.get(ReleaseService).releaseBatch(16);
      expect((await sql(`SELECT status FROM fu.enrollments WHERE id = $1`, [untag]))[0].status).toBe('completed');
      const effects = await sql(`SELECT kind, status, reason FROM fu.effects WHERE enrollment_id = $1`, [send]);
      expect(effects).toEqual([{ kind: 'send', status: 'skipped', reason: 'no_consent' }]);
    });

    it('ten tag steps of one contact due at once, released by four workers, all complete with no deadlock and no failure', async () => {
      const org = randomUUID();
      const contactId = await contactOf(org);
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push(await enroll(org, await activeFlow(org, ...oneAction('tag', { mode: 'tag', tags: [`t${i}`] })), contactId));
      const release = followups.get(ReleaseService);
      const start = clock.now();
      try {
        // A worker that finds the contact busy defers its rows 2 s: move the clock on between rounds.
        for (let round = 0; round < 10; round++) {
          await Promise.all(
            Array.from({ length: 4 }, async () => {
              while ((await release.releaseBatch(3)) > 0);
            }),
          );
          const [{ n }] = await sql(`SELECT count(*)::int AS n FROM fu.enrollments WHERE id = ANY($1::uuid[]) AND status = 'completed'`, [ids]);
          if (n === ids.length) break;
          clock.advance(2000);
        }
        const rows = await sql(`SELECT status, failures, last_error FROM fu.enrollments WHERE id = ANY($1::uuid[])`, [ids]);
        expect(rows.map((r) => [r.status, r.failures, r.last_error])).toEqual(ids.map(() => ['completed', 0, null]));
        // Messaging owns the tags: each step tagged the contact there.
        const owner = await followups.get(RpcClient).callUnchecked<ContactAnswer>('messaging', MessagingRpc.ContactGet, { organization_id: org, contact_id: contactId });
        expect([...(owner.data ?? owner).tags].sort()).toEqual(ids.map((_, i) => `t${i}`).sort());
      } finally {
        clock.set(start);
      }
    });
  });
});
