import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { aConnectedSender, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { startFollowups } from '../followups/followups-world.js';
import { gatewayBuilders, httpClient, type SeededKey } from './gateway-world.js';

/**
 * Quiet hours in the recipient's time zone and the follow-ups entitlement, black-box through the
 * gateway: a contact created over REST with its own `time_zone` (messaging → followups), a flow
 * whose `timezone_mode` is `contact`, the release loop running on a fixed clock, and the answers
 * read back over REST; the settings validation and the OpenAPI document of both.
 */
describe('Follow-up gates over REST (gateway → messaging, followups)', () => {
  let world: TestWorld;
  let http: ReturnType<typeof httpClient>;
  let admin: SeededKey;
  let writer: SeededKey;
  // Tuesday 13:00 UTC: 10:00 in São Paulo (inside 09–18), 22:00 in Tokyo (outside).
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));

  beforeAll(async () => {
    world = await createTestWorld('gw_fu_gates');
    await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '200' })));
    await startFollowups(world, { clock, env: { FOLLOWUP_RELEASE_ENABLED: 'true', FOLLOWUP_POLL_MS: '100', FOLLOWUP_BULK_ENABLED: 'false', FOLLOWUP_TRIGGERS_ENABLED: 'false', FOLLOWUP_PROMISES_ENABLED: 'false' } });
    const config = world.config(GatewayConfig);
    const gateway: NestFastifyApplication = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    const build = gatewayBuilders(gateway);
    admin = await build.organizationWithKey({ scopes: ['admin', 'agents:read', 'agents:write', 'messaging:write'] });
    writer = await build.organizationWithKey({ organizationId: admin.organizationId, scopes: ['agents:read', 'agents:write'], email: 'writer@example.com', role: 'operator' });
    await aConnectedSender(world, admin.organizationId, { sender_id: randomUUID() });
    const saved = await http('PUT', '/ai/followups/settings', {
      secret: admin.secret,
      json: { customer_id: org(), expected_revision: 0, approved_templates: [{ name: 'lembrete', language: 'pt_BR', parameter_count: 0 }] },
    });
    expect(saved.status).toBe(200);
  });
  afterAll(() => world.close());

  const org = () => admin.organizationId;
  const q = `?customer_id=${'$ORG'}`;
  const withOrg = (path: string) => path.replace('$ORG', org());

  const flowBody = (settings: Record<string, unknown>) => ({
    customer_id: org(),
    name: `lembrete ${randomUUID().slice(0, 6)}`,
    graph: {
      nodes: [
        { id: 't', type: 'trigger', config: {} },
        { id: 'a', type: 'action', config: { mode: 'template', template: { name: 'lembrete', language: 'pt_BR' } } },
        { id: 'e', type: 'end', config: {} },
      ],
      edges: [
        { id: 'e1', source: 't', target: 'a', condition: { type: 'always' } },
        { id: 'e2', source: 'a', target: 'e', condition: { type: 'always' } },
      ],
    },
    settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', send_start_hour: 9, send_end_hour: 18, send_days: [1, 2, 3, 4, 5], timezone: 'America/Sao_Paulo', ...settings },
  });

  async function activeFlow(settings: Record<string, unknown>): Promise<string> {
    const created = await http('POST', '/ai/followup-flows', { secret: admin.secret, json: flowBody(settings) });
    expect(created.status).toBe(201);
    const published = await http('POST', `/ai/followup-flows/${created.body.data.id}/publish`, { secret: admin.secret, json: { customer_id: org(), expected_revision: 1 } });
    expect(published.status).toBe(200);
    const active = await http('PATCH', `/ai/followup-flows/${created.body.data.id}`, { secret: admin.secret, json: { customer_id: org(), expected_revision: published.body.data.revision, status: 'active' } });
    expect(active.status).toBe(200);
    return created.body.data.id;
  }

  /** A contact created over REST; waits until followups' read model has it (with its zone). */
  async function contact(timeZone?: string): Promise<string> {
    const phone = `+55119${String(Math.floor(10_000_000 + Math.random() * 89_999_999))}`;
    const created = await http('POST', '/contacts', { secret: admin.secret, json: { name: 'Ana', phone, ...(timeZone ? { time_zone: timeZone } : {}) } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await eventually(async () => {
      const [row] = await world.sql<{ time_zone: string | null }>(`SELECT time_zone FROM "${world.schema('followups')}".contacts WHERE contact_id = $1`, [id]);
      return !!row && row.time_zone === (timeZone ?? null);
    });
    return id;
  }

  const enroll = async (flowId: string, contactId: string, secret = admin.secret) => http('POST', '/ai/followups/enrollments', { secret, json: { customer_id: org(), flow_id: flowId, contact_id: contactId, operation_key: randomUUID() } });
  const detail = async (id: string) => (await http('GET', withOrg(`/ai/followups/enrollments/${id}${q}`), { secret: admin.secret })).body.data;

  it("defers a send to the window's opening on the contact's clock, and sends at once for a contact without a zone", async () => {
    const flowId = await activeFlow({ timezone_mode: 'contact' });
    const inTokyo = await enroll(flowId, await contact('Asia/Tokyo'));
    const noZone = await enroll(flowId, await contact());
    expect(inTokyo.status).toBe(201);
    expect(noZone.status).toBe(201);

    await eventually(async () => (await detail(inTokyo.body.data.id)).effects.some((e: { kind: string }) => e.kind === 'schedule_plan'));
    const tokyo = await detail(inTokyo.body.data.id);
    // Wednesday 09:00 in Tokyo.
    expect(tokyo.enrollment).toMatchObject({ status: 'active', next_run_at: '2026-10-07T00:00:00.000Z' });
    expect(tokyo.effects).toEqual([expect.objectContaining({ kind: 'schedule_plan', reason: 'send_window', usage: { planned_at: '2026-10-07T00:00:00.000Z' } })]);

    await eventually(async () => (await detail(noZone.body.data.id)).enrollment.status === 'completed');
    expect((await detail(noZone.body.data.id)).effects).toEqual([expect.objectContaining({ kind: 'send', status: 'queued', delivery_status: null, delivered_at: null, read_at: null })]);
  });

  it('keeps the flow zone when timezone_mode is flow, and refuses an unknown mode with 400 validation_failed', async () => {
    const flowId = await activeFlow({ timezone_mode: 'flow' });
    const e = await enroll(flowId, await contact('Asia/Tokyo'));
    await eventually(async () => (await detail(e.body.data.id)).enrollment.status === 'completed');

    const bad = await http('POST', '/ai/followup-flows', { secret: admin.secret, json: flowBody({ timezone_mode: 'recipient' }) });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    expect(JSON.stringify(bad.body.error.details)).toContain('timezone_mode');
  });

  it('turns the entitlement off and on with an admin key only; off refuses enrollments with 409 plan_lost', async () => {
    const flowId = await activeFlow({});
    const denied = await http('PUT', '/ai/followups/settings/entitlement', { secret: writer.secret, json: { customer_id: org(), followups_enabled: false } });
    expect(denied.status).toBe(403);
    const badBody = await http('PUT', '/ai/followups/settings/entitlement', { secret: admin.secret, json: { customer_id: org(), followups_enabled: 'no' } });
    expect(badBody.status).toBe(400);

    const off = await http('PUT', '/ai/followups/settings/entitlement', { secret: admin.secret, json: { customer_id: org(), followups_enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body.data).toMatchObject({ customer_id: org(), followups_enabled: false });
    expect((await http('GET', withOrg(`/ai/followups/settings${q}`), { secret: writer.secret })).body.data.followups_enabled).toBe(false);
    const refused = await enroll(flowId, await contact(), writer.secret);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'conflict', details: { reason: 'plan_lost' } });

    const on = await http('PUT', '/ai/followups/settings/entitlement', { secret: admin.secret, json: { customer_id: org(), followups_enabled: true } });
    expect(on.body.data.followups_enabled).toBe(true);
    expect((await enroll(flowId, await contact(), writer.secret)).status).toBe(201);
  });

  it('documents timezone_mode and the entitlement route in the OpenAPI document', async () => {
    const doc = (await http('GET', '/docs/json')).body;
    expect(doc.components.schemas.FlowSettingsDto.properties.timezone_mode).toMatchObject({ enum: ['flow', 'contact'], default: 'flow' });
    const route = doc.paths['/ai/followups/settings/entitlement'].put;
    expect(route.tags).toEqual(['followups']);
    expect(route.summary).toBeTruthy();
    expect(route.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/FollowupSettingsAnswerDto');
    expect(Object.keys(route.responses)).toEqual(expect.arrayContaining(['400', '403', '503']));
    expect(doc.components.schemas.FollowupSettingsDto.properties.followups_enabled).toMatchObject({ type: 'boolean', example: true });
  });
});
