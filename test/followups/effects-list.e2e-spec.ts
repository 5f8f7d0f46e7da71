import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { aConnectedSender, aContactWhoWrote, aFlow, anActiveFlow, createTestWorld, HOUR, type TestWorld, textStep } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { startFollowups } from './followups-world.js';

/** A listed effect, the fields these tests read. */
interface Listed {
  id: string;
  enrollment_id: string;
  status: string;
  kind: string;
  text: string | null;
  flow_id: string;
  flow_name: string;
  contact_id: string;
}

/**
 * `GET /ai/followups/effects?status=awaiting_decision` through the gateway (issue 20: the
 * console's approval page): the organization's sends waiting for a person, oldest first, each with
 * its flow and contact, cursor-paged; filtered by flow; a decided send leaves the list; any key
 * with agents:read lists them (an operator's too), while deciding still needs an admin's key.
 */
describe('Follow-up effects: the list of sends awaiting a decision', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let release: ReleaseService;
  let flows: FlowsService;
  let enrollments: EnrollmentsService;
  let admin: SeededKey;
  let operator: SeededKey;
  let stranger: SeededKey;
  let org: string;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));
  const waiting: Array<{ effectId: string; enrollmentId: string; flowId: string; contactId: string; at: number }> = [];
  /** The waiting sends in the order the list promises: oldest first, then by id (rows of one instant). */
  let expected: string[];
  let flowA: string;
  let flowB: string;

  const list = (key: SeededKey, query: Record<string, string | number>) => http('GET', `/ai/followups/effects?${new URLSearchParams({ customer_id: key.organizationId, ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])) })}`, { secret: key.secret });
  const decide = (effectId: string, key: SeededKey, approve: boolean) => http('POST', `/ai/followups/effects/${effectId}/decision`, { secret: key.secret, json: { customer_id: key.organizationId, approve } });
  const approvalFlow = (name: string, text: string) => anActiveFlow(flows, org, { name, ...aFlow({ steps: [textStep('a', text)], settings: { require_approval: true } }) });

  /** Enrolls a contact in `flowId` and releases its send, which then waits for a decision; `tick` moves the clock on after it. */
  async function awaitingSend(flowId: string, tick = true): Promise<void> {
    const contactId = await aContactWhoWrote(world, org, clock.now(), HOUR);
    const { enrollment } = await enrollments.create({ organization_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID() });
    expect(await release.releaseOne()).toBe('released');
    const [effect] = await world.sql<{ id: string; status: string }>(`SELECT id, status FROM "${world.schema('followups')}".effects WHERE enrollment_id = $1 AND kind = 'send'`, [enrollment.id]);
    expect(effect?.status).toBe('awaiting_decision');
    waiting.push({ effectId: effect!.id, enrollmentId: enrollment.id, flowId, contactId, at: clock.now().getTime() });
    if (tick) clock.advance(1000);
  }

  beforeAll(async () => {
    world = await createTestWorld('fu_effects_list');
    followups = await startFollowups(world, { clock });
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    const build = gatewayBuilders(gateway);
    admin = await build.organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
    org = admin.organizationId;
    const operatorMember = await build.members.add({ organizationId: org, email: 'operator@example.com', role: 'operator' });
    const operatorKey = await build.apiKeys.create({ organizationId: org, createdByMemberId: operatorMember.id, scopes: ['agents:read', 'agents:write'] });
    operator = { organizationId: org, memberId: operatorMember.id, apiKeyId: operatorKey.key.id, secret: operatorKey.secret };
    stranger = await build.organizationWithKey({ scopes: ['agents:read', 'agents:write'], email: 'stranger@example.com' });
    release = followups.get(ReleaseService);
    flows = followups.get(FlowsService);
    enrollments = followups.get(EnrollmentsService);
    await aConnectedSender(world, org, { sender_id: randomUUID() });
    flowA = await approvalFlow('Aprovação A', 'Posso ajudar em algo mais?');
    flowB = await approvalFlow('Aprovação B', 'Seu pedido chegou bem?');
    await awaitingSend(flowA);
    await awaitingSend(flowB);
    // The last two are released at the same instant: their order is their ids'.
    await awaitingSend(flowA, false);
    await awaitingSend(flowB);
    expected = [...waiting].sort((a, b) => a.at - b.at || (a.effectId < b.effectId ? -1 : 1)).map((w) => w.effectId);
  });
  afterAll(() => world.close());

  it('lists the waiting sends oldest first, each with its flow and contact', async () => {
    const answer = await list(admin, { status: 'awaiting_decision' });
    expect(answer.status).toBe(200);
    expect(answer.body.data.next_cursor).toBeNull();
    const items = answer.body.data.data as Listed[];
    expect(items.map((i) => i.id)).toEqual(expected);
    expect(expected.slice(0, 2)).toEqual([waiting[0]!.effectId, waiting[1]!.effectId]);
    expect(items[1]).toMatchObject({ kind: 'send', status: 'awaiting_decision', text: 'Seu pedido chegou bem?', enrollment_id: waiting[1]!.enrollmentId, flow_id: flowB, flow_name: 'Aprovação B', contact_id: waiting[1]!.contactId });
  });

  it('pages with the cursor without repeating or skipping a send, and filters by flow', async () => {
    // One a page: the boundary falls between the two sends of one instant too.
    const walked: string[] = [];
    let next: string | null = null;
    do {
      const answer = await list(admin, { status: 'awaiting_decision', limit: 1, ...(next ? { cursor: next } : {}) });
      expect(answer.status).toBe(200);
      walked.push(...(answer.body.data.data as Listed[]).map((i) => i.id));
      next = answer.body.data.next_cursor;
    } while (next && walked.length <= waiting.length);
    expect(walked).toEqual(expected);

    const first = await list(admin, { status: 'awaiting_decision', limit: 3 });
    expect((first.body.data.data as Listed[]).map((i) => i.id)).toEqual(expected.slice(0, 3));
    const cursor = first.body.data.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    const second = await list(admin, { status: 'awaiting_decision', limit: 3, cursor });
    expect((second.body.data.data as Listed[]).map((i) => i.id)).toEqual(expected.slice(3));
    expect(second.body.data.next_cursor).toBeNull();

    const onlyA = await list(admin, { status: 'awaiting_decision', flow_id: flowA });
    expect((onlyA.body.data.data as Listed[]).map((i) => i.id)).toEqual(expected.filter((id) => waiting.find((w) => w.effectId === id)!.flowId === flowA));
    expect((onlyA.body.data.data as Listed[]).every((i) => i.flow_id === flowA)).toBe(true);
    // A cursor issued for other filters is stale.
    const stale = await list(admin, { status: 'awaiting_decision', flow_id: flowA, cursor });
    expect(stale.status).toBe(422);
    expect(stale.body.error.code).toBe('invalid_cursor');
  });

  it('refuses a missing or unlisted status, a bad limit, and another organization’s customer_id', async () => {
    const refused: Array<Record<string, string | number>> = [{}, { status: 'sent' }, { status: 'awaiting_decision', limit: 0 }, { status: 'awaiting_decision', limit: 101 }, { status: 'awaiting_decision', flow_id: 'not-a-uuid' }];
    for (const query of refused) {
      const answer = await list(admin, query);
      expect({ query, status: answer.status, code: answer.body.error?.code }).toEqual({ query, status: 400, code: 'validation_failed' });
    }
    const crossed = await http('GET', `/ai/followups/effects?customer_id=${stranger.organizationId}&status=awaiting_decision`, { secret: admin.secret });
    expect(crossed.status).toBe(404);
    // Another organization sees none of these.
    expect((await list(stranger, { status: 'awaiting_decision' })).body.data).toEqual({ data: [], next_cursor: null });
  });

  it("an operator's key lists the waiting sends but cannot decide one; once an admin decides, the send leaves the list", async () => {
    const target = waiting[0]!.effectId;
    const seen = await list(operator, { status: 'awaiting_decision' });
    expect(seen.status).toBe(200);
    expect((seen.body.data.data as Listed[]).map((i) => i.id)).toContain(target);
    const refused = await decide(target, operator, true);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect((await list(admin, { status: 'awaiting_decision' })).body.data.data.map((i: Listed) => i.id)).toContain(target);

    expect((await decide(target, admin, false)).body.data).toEqual({ ok: true, id: target, status: 'rejected' });
    const after = await list(admin, { status: 'awaiting_decision' });
    expect((after.body.data.data as Listed[]).map((i) => i.id)).toEqual(expected.filter((id) => id !== target));
  });
});
