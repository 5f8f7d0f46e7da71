import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { aProvisionedNumber, aTwoTextFlow, createTestWorld, eventually, HOUR, lastWeekdayMorning, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { SEED_002_FLOW_EXAMPLE } from '@touchpoint/contracts';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, setLimits } from '../messaging/helpers.js';
import { type Dispatcher, SandboxHandle } from '../outbox/harness.js';
import { startFollowupsWithSendPath } from './followups-world.js';

/** Waits for a condition across several services on a busy machine (up to 30 s). */
const soon = <T>(probe: () => Promise<T>) => eventually(probe, 30_000, 100);

/**
 * Follow-ups through the whole platform: gateway → followups → messaging → outbox-dispatcher →
 * the Meta sandbox, and the contact's replies coming back through messaging's inbound path.
 */
describe('follow-ups end to end', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let dispatcher: Dispatcher;
  let followups: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let key: SeededKey;
  let org: string;
  const phoneNumberId = `${Date.now()}`.slice(-15);
  const clock = new FixedClock(lastWeekdayMorning());
  let inboundSeconds = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    world = await createTestWorld('fu_chain');
    sandbox = await SandboxHandle.start();
    ({ dispatcher, messaging, followups } = await startFollowupsWithSendPath(world, sandbox, { clock }));
    const config = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    key = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
    org = key.organizationId;
    await setLimits(world, org, {});
    // The dispatcher announces the number; messaging and followups keep it in their read models.
    await aProvisionedNumber(world, dispatcher, org, phoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(() => sandbox.reset());

  const fu = (table: string) => `"${world.schema('followups')}".${table}`;
  const enrollment = async (id: string) => (await world.sql<Record<string, unknown>>(`SELECT * FROM ${fu('enrollments')} WHERE id = $1`, [id]))[0];
  const sendEffects = (id: string) => world.sql<Record<string, unknown> & { idempotency_key: string }>(`SELECT * FROM ${fu('effects')} WHERE enrollment_id = $1 AND kind = 'send' ORDER BY created_at`, [id]);
  const outboxEntry = async (key: string) => (await world.sql<Record<string, unknown>>(`SELECT * FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE idempotency_key = $1`, [key]))[0];
  /** Drains twice, 7 s apart on the dispatcher's clock: the inbound's read receipt went first on the pair, and a pair paces 6.5 s. */
  const drain = async () => {
    await dispatcher.drain.drain(5000);
    dispatcher.clock.advance(7000);
    await dispatcher.drain.drain(5000);
  };

  /** The contact writes through messaging's WhatsApp inbound path; answers its ids in messaging. */
  async function contactWrites(waId: string, text: string): Promise<{ contactId: string; conversationId: string }> {
    await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, text, (inboundSeconds += 5), phoneNumberId));
    const [row] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM "${world.schema('messaging')}".messages WHERE direction = 'inbound' AND body = $1 ORDER BY created_at DESC LIMIT 1`, [text]);
    // Followups has taken the message in (its stop path holds the contact row while it does, and a
    // release that meets the lock comes back later instead of waiting).
    await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".contacts WHERE contact_id = $1 AND last_inbound_text = $2`, [row!.contact_id, text])).length === 1);
    return { contactId: row!.contact_id, conversationId: row!.conversation_id };
  }

  async function activeFlow(body: object): Promise<string> {
    const created = await http('POST', '/ai/followup-flows', { secret: key.secret, json: { ...body, customer_id: org } });
    expect(created.status).toBe(201);
    const published = await http('POST', `/ai/followup-flows/${created.body.data.id}/publish`, { secret: key.secret, json: { customer_id: org, expected_revision: 1 } });
    expect(published.status).toBe(200);
    const active = await http('PATCH', `/ai/followup-flows/${created.body.data.id}`, { secret: key.secret, json: { customer_id: org, expected_revision: published.body.data.revision, status: 'active' } });
    expect(active.status).toBe(200);
    return created.body.data.id;
  }

  async function enroll(flowId: string, who: { contactId: string; conversationId: string }) {
    const res = await http('POST', '/ai/followups/enrollments', { secret: key.secret, json: { customer_id: org, flow_id: flowId, contact_id: who.contactId, conversation_id: who.conversationId, operation_key: randomUUID() } });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  it('runs the seed example: create → publish → activate → enroll → advance_now → the text reaches the sandbox → completed', async () => {
    const waId = '5592988887777';
    const who = await contactWrites(waId, 'Oi, recebi a proposta');
    const flowId = await activeFlow(SEED_002_FLOW_EXAMPLE);
    const e = await enroll(flowId, who);
    expect(e).toMatchObject({ status: 'active', node_id: 'espera' });
    const advanced = await http('POST', `/ai/followups/enrollments/${e.id}/control`, { secret: key.secret, json: { customer_id: org, expected_revision: e.revision, action: 'advance_now' } });
    expect(advanced.status).toBe(200);
    expect(await followups.get(ReleaseService).releaseOne()).toBe('released');

    const [effect] = await sendEffects(e.id);
    await soon(async () => (await outboxEntry(effect.idempotency_key))?.status === 'pending');
    await drain();
    const wire = await sandbox.received(waId);
    expect(wire.map((c) => (c.body as { text?: { body: string } }).text?.body)).toContain('Oi! Conseguiu ver a proposta que enviamos?');
    await soon(async () => (await sendEffects(e.id))[0].status === 'sent');
    // Messaging's report names the message row (the dispatcher's may have settled the status first).
    await soon(async () => (await sendEffects(e.id))[0].message_id);
    const done = await http('GET', `/ai/followups/enrollments/${e.id}?customer_id=${org}`, { secret: key.secret });
    expect(done.body.data.enrollment).toMatchObject({ status: 'completed', reason: 'exhausted' });
    expect(done.body.data.effects).toEqual([expect.objectContaining({ kind: 'send', status: 'sent', text: 'Oi! Conseguiu ver a proposta que enviamos?' })]);
    expect(done.body.data.effects[0].message_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('cancels a queued follow-up when the contact replies before the dispatcher claims it', async () => {
    const waId = '5592988880001';
    const who = await contactWrites(waId, 'Pode me mandar os detalhes?');
    const flowId = await activeFlow(twoTextsFlow());
    const e = await enroll(flowId, who);
    expect(await followups.get(ReleaseService).releaseOne()).toBe('released');
    const [queued] = await sendEffects(e.id);
    await soon(async () => (await outboxEntry(queued.idempotency_key))?.status === 'pending');

    await contactWrites(waId, 'Já resolvi, obrigado!');
    await soon(async () => (await outboxEntry(queued.idempotency_key))?.status === 'cancelled');
    await soon(async () => (await sendEffects(e.id))[0].status === 'cancelled');
    expect(await enrollment(e.id)).toMatchObject({ status: 'completed', reason: 'replied' });
    await drain();
    expect(await sandbox.received(waId)).toEqual([]);
  });

  it('leaves a follow-up the dispatcher already sent as sent when the reply comes after, and stops the rest', async () => {
    const waId = '5592988880002';
    const who = await contactWrites(waId, 'Quero saber o prazo');
    const flowId = await activeFlow(twoTextsFlow());
    const e = await enroll(flowId, who);
    await followups.get(ReleaseService).releaseOne();
    const [queued] = await sendEffects(e.id);
    await soon(async () => (await outboxEntry(queued.idempotency_key))?.status === 'pending');
    await drain();
    expect(await sandbox.received(waId)).toHaveLength(1);

    await contactWrites(waId, 'Recebi, valeu');
    await soon(async () => (await enrollment(e.id)).status === 'completed');
    await soon(async () => (await sendEffects(e.id))[0].status === 'sent');
    expect((await outboxEntry(queued.idempotency_key)).status).toBe('accepted');
    clock.advance(2 * HOUR);
    try {
      expect(await followups.get(ReleaseService).releaseOne()).toBe('idle');
    } finally {
      clock.advance(-2 * HOUR);
    }
    await drain();
    expect(await sandbox.received(waId)).toHaveLength(1);
  });
});

/** trigger → text → wait 1 h → text → end, window always open, stops on reply. */
function twoTextsFlow() {
  return { name: 'Duas mensagens', ...aTwoTextFlow({ first: 'Seguem os detalhes que você pediu.', second: 'Conseguiu ver?' }) };
}
