import { randomUUID } from 'node:crypto';
import { type FlowGraph, type FlowSettings, MessagingEvents, OutboxEvents } from '@touchpoint/contracts';
import { ALWAYS_OPEN, createTestWorld, eventually, HOUR, publishEvent, type TestWorld, aMessageReceived } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient } from '../gateway/gateway-world.js';
import { startFollowups } from './followups-world.js';

/** `GET /ai/followup-flows/{id}/stats`: counts, stop reasons, sends by status, reply rate and median time to reply. */
describe('Follow-up flow statistics', () => {
  let world: TestWorld;

  beforeAll(async () => {
    world = await createTestWorld('fu_stats');
  });
  afterAll(() => world.close());

  it('reports what the flow did', async () => {
    const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));
    const followups = await startFollowups(world, { clock });
    const config = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    const http = httpClient(await gateway.getUrl());
    const key = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
    const org = key.organizationId;
    const schema = world.schema('followups');
    await publishEvent(world, OutboxEvents.SenderConnected, org, { sender_id: randomUUID(), channel: 'whatsapp', is_default: true, status: 'connected' });
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema}".senders WHERE organization_id = $1`, [org])).length === 1);

    const [graph, settings]: [FlowGraph, FlowSettings] = [
      {
        nodes: [
          { id: 't', type: 'trigger', config: {} },
          { id: 'a', type: 'action', config: { mode: 'text', body: 'Conseguiu ver a proposta?' } },
          { id: 'w', type: 'wait', config: { mode: 'fixed', duration_ms: 24 * HOUR } },
          { id: 'e', type: 'end', config: {} },
        ],
        edges: [
          { id: 'e1', source: 't', target: 'a', condition: { type: 'always' } },
          { id: 'e2', source: 'a', target: 'w', condition: { type: 'always' } },
          { id: 'e3', source: 'w', target: 'e', condition: { type: 'always' } },
        ],
      },
      { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN },
    ];
    const flows = followups.get(FlowsService);
    const flow = await flows.create({ organization_id: org, name: 'stats', graph, settings });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });

    const inbound = (contactId: string, at: Date, extra: Record<string, unknown> = {}) => publishEvent(world, MessagingEvents.MessageReceived, org, aMessageReceived(contactId, { external_id: `wamid.${randomUUID()}`, text: 'oi', ...extra }), at);
    const contacts = Array.from({ length: 5 }, () => randomUUID());
    for (const c of contacts) await inbound(c, new Date(clock.now().getTime() - HOUR));
    await eventually(async () => (await world.sql(`SELECT count(*)::int AS n FROM "${schema}".contacts WHERE contact_id = ANY($1::uuid[])`, [contacts]))[0]!.n === 5);
    const enrollments = followups.get(EnrollmentsService);
    const ids: string[] = [];
    for (const c of contacts) ids.push((await enrollments.create({ organization_id: org, flow_id: flow.id, contact_id: c, operation_key: randomUUID() })).enrollment.id);
    const release = followups.get(ReleaseService);
    // Four are sent now; the fifth is cancelled before its release.
    await enrollments.control({ organization_id: org, enrollment_id: ids[4]!, expected_revision: 1, action: 'cancel', reason: 'operator' });
    for (let i = 0; i < 4; i++) expect(await release.releaseOne()).toBe('released');

    // Replies 10 and 30 minutes after the send; one contact opts out; one stays silent.
    const replyAfter = async (contactId: string, minutes: number) => {
      clock.set(new Date(new Date('2026-10-06T13:00:00Z').getTime() + minutes * 60_000));
      await inbound(contactId, clock.now());
    };
    await replyAfter(contacts[0]!, 10);
    await eventually(async () => (await world.sql(`SELECT status FROM "${schema}".enrollments WHERE id = $1`, [ids[0]]))[0]!.status === 'completed');
    await replyAfter(contacts[1]!, 30);
    await eventually(async () => (await world.sql(`SELECT status FROM "${schema}".enrollments WHERE id = $1`, [ids[1]]))[0]!.status === 'completed');
    await publishEvent(world, MessagingEvents.ContactOptedOut, org, { contact_id: contacts[2], channel: 'whatsapp', message_id: null });
    await eventually(async () => (await world.sql(`SELECT status FROM "${schema}".enrollments WHERE id = $1`, [ids[2]]))[0]!.status === 'cancelled');

    const res = await http('GET', `/ai/followup-flows/${flow.id}/stats?customer_id=${org}`, { secret: key.secret });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      flow_id: flow.id,
      enrolled: 5,
      active: 1,
      completed: 2,
      stopped: { opted_out: 1, operator: 1 },
      // The dispatcher has not reported on any of the four sends yet.
      sends: { queued: 4 },
      enrollments_with_send: 4,
      replied: 2,
      reply_rate: 0.5,
      median_time_to_reply_seconds: 1200,
    });
    expect((await http('GET', `/ai/followup-flows/${randomUUID()}/stats?customer_id=${org}`, { secret: key.secret })).status).toBe(404);
  });
});
