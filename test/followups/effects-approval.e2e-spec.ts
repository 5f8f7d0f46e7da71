import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { aConnectedSender, aContactWhoWrote, aFlow, anActiveFlow, createTestWorld, HOUR, type TestWorld, textStep } from '@touchpoint/testing';
import { UnitOfWork } from '@touchpoint/runtime';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { SendOutcomesService } from '../../apps/followups/src/release/send-outcomes.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
/** A row as these tests read it: the columns they use typed, every other column `unknown`. */
type EffectRow = Row & { id: string; status: string; idempotency_key: string };

/**
 * Effects through the gateway (seed 002 "Efeitos"): a flow that requires approval holds its send
 * `awaiting_decision`; only a key created by an admin decides; an approval whose key is revoked or
 * whose approver leaves before the send ends `rejected` / `approval_revoked` and nothing is sent;
 * an uncertain send is reconciled with evidence.
 */
describe('Follow-up effects: approval and reconciliation', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let release: ReleaseService;
  let flows: FlowsService;
  let enrollments: EnrollmentsService;
  let build: ReturnType<typeof gatewayBuilders>;
  let admin: SeededKey;
  let operator: SeededKey;
  let org: string;
  let schema: string;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));
  const sender = randomUUID();

  beforeAll(async () => {
    world = await createTestWorld('fu_effects');
    followups = await startFollowups(world, { clock });
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    build = gatewayBuilders(gateway);
    admin = await build.organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
    org = admin.organizationId;
    const operatorMember = await build.members.add({ organizationId: org, email: 'operator@example.com', role: 'operator' });
    const operatorKey = await build.apiKeys.create({ organizationId: org, createdByMemberId: operatorMember.id, scopes: ['agents:read', 'agents:write'] });
    operator = { organizationId: org, memberId: operatorMember.id, apiKeyId: operatorKey.key.id, secret: operatorKey.secret };
    release = followups.get(ReleaseService);
    flows = followups.get(FlowsService);
    enrollments = followups.get(EnrollmentsService);
    schema = world.schema('followups');
    await aConnectedSender(world, org, { sender_id: sender });
  });
  afterAll(() => world.close());
  afterEach(() => world.sql(`UPDATE "${schema}".enrollments SET status = 'cancelled', next_run_at = NULL WHERE status <> 'cancelled'`));

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const enrollment = async (id: string) => (await sql<Row & { next_run_at: Date }>(`SELECT * FROM fu.enrollments WHERE id = $1`, [id]))[0];
  const sendEffect = async (id: string) => (await sql<EffectRow>(`SELECT * FROM fu.effects WHERE enrollment_id = $1 AND kind = 'send'`, [id]))[0];
  const sendCommands = (enrollmentId: string) => sql<{ payload: { data: unknown } }>(`SELECT payload FROM fu.outbox_events WHERE type = 'messaging.send' AND event_id LIKE $1`, [`followup:${enrollmentId}:%`]);
  const decide = (effectId: string, key: SeededKey, approve: boolean) => http('POST', `/ai/followups/effects/${effectId}/decision`, { secret: key.secret, json: { customer_id: org, approve } });

  /** trigger → text → end, held for approval. */
  const activeFlow = () => anActiveFlow(flows, org, { name: `approval ${randomUUID().slice(0, 6)}`, ...aFlow({ steps: [textStep('a', 'Posso ajudar em algo mais?')], settings: { require_approval: true } }) });

  /** An enrollment whose send waits for a decision (released once). */
  async function awaitingSend(): Promise<{ enrollmentId: string; effectId: string }> {
    const contactId = await aContactWhoWrote(world, org, clock.now(), HOUR);
    const { enrollment: e } = await enrollments.create({ organization_id: org, flow_id: await activeFlow(), contact_id: contactId, operation_key: randomUUID() });
    expect(await release.releaseOne()).toBe('released');
    const effect = await sendEffect(e.id);
    expect(effect).toMatchObject({ status: 'awaiting_decision', text: 'Posso ajudar em algo mais?', idempotency_key: null });
    expect(await enrollment(e.id)).toMatchObject({ status: 'active', node_id: 'a', next_run_at: null });
    expect(await sendCommands(e.id)).toEqual([]);
    // Waiting for a person: the loop has nothing to do.
    expect(await release.releaseOne()).toBe('idle');
    return { enrollmentId: e.id, effectId: effect.id };
  }

  it('shows the waiting send on the enrollment; an operator-created key is refused (403); an admin-created key approves and it is sent', async () => {
    const { enrollmentId, effectId } = await awaitingSend();
    const detail = await http('GET', `/ai/followups/enrollments/${enrollmentId}?customer_id=${org}`, { secret: admin.secret });
    expect(detail.body.data.effects).toEqual([expect.objectContaining({ id: effectId, kind: 'send', status: 'awaiting_decision', text: 'Posso ajudar em algo mais?', template: null, usage: null })]);

    const refused = await decide(effectId, operator, true);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect((await sendEffect(enrollmentId)).status).toBe('awaiting_decision');

    const approved = await decide(effectId, admin, true);
    expect(approved.status).toBe(200);
    expect(approved.body.data).toEqual({ ok: true, id: effectId, status: 'approved' });
    // The same decision again answers the same; the opposite one is a conflict.
    expect((await decide(effectId, admin, true)).body.data).toEqual({ ok: true, id: effectId, status: 'approved' });
    expect((await decide(effectId, admin, false)).status).toBe(409);

    expect(await release.releaseOne()).toBe('released');
    const effect = await sendEffect(enrollmentId);
    expect(effect).toMatchObject({ id: effectId, status: 'queued', idempotency_key: `followup:${enrollmentId}:a:1`, sender_id: sender, decided_by_api_key_id: admin.apiKeyId });
    const commands = await sendCommands(enrollmentId);
    expect(commands).toHaveLength(1);
    expect(commands[0].payload.data).toMatchObject({ text: 'Posso ajudar em algo mais?', context: { followup_effect_id: effectId } });
    expect(await enrollment(enrollmentId)).toMatchObject({ status: 'completed', inflight_effect_id: effectId });
  });

  it('a rejected send is never sent and the flow moves past it', async () => {
    const { enrollmentId, effectId } = await awaitingSend();
    const rejected = await decide(effectId, admin, false);
    expect(rejected.body.data).toEqual({ ok: true, id: effectId, status: 'rejected' });
    expect(await release.releaseOne()).toBe('released');
    expect(await sendEffect(enrollmentId)).toMatchObject({ status: 'rejected', reason: 'decision_rejected' });
    expect(await sendCommands(enrollmentId)).toEqual([]);
    expect((await enrollment(enrollmentId)).status).toBe('completed');
  });

  it('approval revoked before the send: the key is revoked → rejected / approval_revoked, nothing sent', async () => {
    const approver = await build.organizationWithKey({ organizationId: org, scopes: ['agents:write'], email: `approver-${randomUUID()}@example.com` });
    const { enrollmentId, effectId } = await awaitingSend();
    expect((await decide(effectId, approver, true)).body.data.status).toBe('approved');
    await build.apiKeys.revoke(approver.apiKeyId, org);

    expect(await release.releaseOne()).toBe('released');
    expect(await sendEffect(enrollmentId)).toMatchObject({ id: effectId, status: 'rejected', reason: 'approval_revoked' });
    expect(await sendCommands(enrollmentId)).toEqual([]);
    const events = await sql(`SELECT type, data FROM fu.enrollment_events WHERE enrollment_id = $1 ORDER BY id`, [enrollmentId]);
    expect(events.find((e) => e.type === 'approval_revoked')?.data).toMatchObject({ effect_id: effectId, cause: 'key_revoked' });
    expect((await enrollment(enrollmentId)).status).toBe('completed');
  });

  it('approval revoked before the send: the approver leaves the organization → rejected / approval_revoked, nothing sent', async () => {
    const approver = await build.organizationWithKey({ organizationId: org, scopes: ['agents:write'], email: `leaver-${randomUUID()}@example.com` });
    const { enrollmentId, effectId } = await awaitingSend();
    expect((await decide(effectId, approver, true)).body.data.status).toBe('approved');
    await build.members.update(org, approver.memberId, { active: false });

    expect(await release.releaseOne()).toBe('released');
    expect(await sendEffect(enrollmentId)).toMatchObject({ status: 'rejected', reason: 'approval_revoked' });
    expect(await sendCommands(enrollmentId)).toEqual([]);
    const events = await sql<{ type: string; data: { cause: string } }>(`SELECT type, data FROM fu.enrollment_events WHERE enrollment_id = $1 AND type = 'approval_revoked'`, [enrollmentId]);
    expect(events[0].data.cause).toBe('member_left');
  });

  it('reconciles an uncertain send with evidence (resolved: true), clears the in-flight marker, and refuses a send that is not uncertain', async () => {
    const { enrollmentId, effectId } = await awaitingSend();
    await decide(effectId, admin, true);
    expect(await release.releaseOne()).toBe('released');
    const effect = await sendEffect(enrollmentId);
    const body = { customer_id: org, outcome: 'sent', note: 'Mensagem conferida no WhatsApp Manager às 10h12.', wamid: 'wamid.HBgNNTUxMTk5OTk5ODg4OBUCABIYIDNBMEY' };

    // Still queued: not an uncertain send.
    const early = await http('POST', `/ai/followups/effects/${effectId}/resolve`, { secret: admin.secret, json: body });
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('not_ambiguous');

    // The dispatcher reports the send ambiguous (the path its outcome event takes).
    const outcomes = followups.get(SendOutcomesService);
    expect(await followups.get(UnitOfWork).run((tx) => outcomes.apply(tx, org, effect.idempotency_key, 'uncertain', { at: clock.now() }))).toBe(true);
    expect((await sendEffect(enrollmentId)).status).toBe('uncertain');

    expect((await http('POST', `/ai/followups/effects/${effectId}/resolve`, { secret: operator.secret, json: body })).status).toBe(403);
    const short = await http('POST', `/ai/followups/effects/${effectId}/resolve`, { secret: admin.secret, json: { ...body, note: 'curta' } });
    expect(short.status).toBe(400);

    const resolved = await http('POST', `/ai/followups/effects/${effectId}/resolve`, { secret: admin.secret, json: body });
    expect(resolved.status).toBe(200);
    expect(resolved.body.data).toEqual({ resolved: true });
    const after = await sendEffect(enrollmentId);
    expect(after.status).toBe('sent');
    expect(after.resolution).toMatchObject({ outcome: 'sent', note: body.note, wamid: body.wamid, api_key_id: admin.apiKeyId });
    expect((await enrollment(enrollmentId)).inflight_effect_id).toBeNull();
    expect((await http('POST', `/ai/followups/effects/${effectId}/resolve`, { secret: admin.secret, json: body })).status).toBe(409);
  });

  // Last: it stops the gateway.
  it('never sends an approval it cannot check: with the gateway down the send waits 15 s, not counted as a failure', async () => {
    const { enrollmentId, effectId } = await awaitingSend();
    expect((await decide(effectId, admin, true)).body.data.status).toBe('approved');
    await gateway.close();
    expect(await release.releaseOne()).toBe('released');
    expect(await sendEffect(enrollmentId)).toMatchObject({ id: effectId, status: 'approved' });
    expect(await sendCommands(enrollmentId)).toEqual([]);
    const row = await enrollment(enrollmentId);
    expect(row).toMatchObject({ status: 'active', node_id: 'a', failures: 0 });
    expect(row.next_run_at.getTime()).toBe(clock.now().getTime() + 15_000);
  }, 20_000);
});
