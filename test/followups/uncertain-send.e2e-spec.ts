import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { aFlow, anActiveFlow, aProvisionedNumber, createTestWorld, eventually, lastWeekdayMorning, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, setLimits } from '../messaging/helpers.js';
import { type Dispatcher, SandboxHandle } from '../outbox/harness.js';
import { startFollowupsWithSendPath } from './followups-world.js';

/** Waits for a fact across several services on a busy machine (up to 30 s). */
const soon = <T>(probe: () => Promise<T>) => eventually(probe, 30_000, 100);

/**
 * A follow-up send whose outcome the dispatcher cannot know (the provider took it, then the
 * answer timed out) is `uncertain` on its effect and `ambiguous` at the outbox, where a person
 * finds it for triage (seed 004 "Ambiguity is resolved by correlation"). The effect view names the
 * send's idempotency key, which is how the entry `GET /outbox/ambiguous` lists is found: the
 * effect knows no message id at that point (no messaging event names one for an unknown outcome).
 * Through the real services: followups → messaging → outbox-dispatcher → the Meta sandbox.
 */
describe('uncertain follow-up sends', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let dispatcher: Dispatcher;
  let followups: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let org: string;
  const phoneNumberId = `${Date.now() + 11}`.slice(-15);
  const clock = new FixedClock(lastWeekdayMorning());
  let inboundSeconds = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    world = await createTestWorld('fu_uncertain');
    sandbox = await SandboxHandle.start();
    ({ dispatcher, messaging, followups } = await startFollowupsWithSendPath(world, sandbox, { clock }));
    org = randomUUID();
    await setLimits(world, org, {});
    await aProvisionedNumber(world, dispatcher, org, phoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  it('lists the outbox entry of an uncertain send in the ambiguous triage under the idempotency key its effect view shows', async () => {
    const waId = `5592986${String(Date.now() % 1_000_000).padStart(6, '0')}`;
    await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, 'Oi, quero saber do pedido', (inboundSeconds += 5), phoneNumberId));
    const [who] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM "${world.schema('messaging')}".messages WHERE direction = 'inbound' AND body = $1`, ['Oi, quero saber do pedido']);
    await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('followups')}".contacts WHERE contact_id = $1`, [who!.contact_id])).length === 1);
    const { graph, settings } = aFlow();
    const flowId = await anActiveFlow(followups.get(FlowsService), org, { name: `incerto ${randomUUID().slice(0, 6)}`, graph, settings });
    const enrollments = followups.get(EnrollmentsService);
    const { enrollment } = await enrollments.create({ organization_id: org, flow_id: flowId, contact_id: who!.contact_id, conversation_id: who!.conversation_id, operation_key: randomUUID() });
    expect(await followups.get(ReleaseService).releaseOne()).toBe('released');
    const sendView = async () => (await enrollments.get({ organization_id: org, enrollment_id: enrollment.id })).effects.find((f) => f.kind === 'send')!;
    const queued = await sendView();
    await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE idempotency_key = $1 AND status = 'pending'`, [queued.idempotency_key])).length === 1);

    // The provider takes the text, but its answer comes after the dispatcher's deadline.
    await sandbox.fault({ kind: 'timeout', hold_ms: 3000, deliver: true, match: { wa_id: waId, type: 'text' } });
    await dispatcher.drain.drain(5000); // the inbound's read receipt goes first on the pair
    dispatcher.clock.advance(7000);
    await dispatcher.drain.drain(5000);

    const texts = (await sandbox.received(waId)).filter((c) => c.context.type === 'text');
    expect(texts.map((c) => c.outcome)).toEqual(['timeout']);
    await soon(async () => (await sendView()).status === 'uncertain');
    const uncertain = await sendView();
    expect(uncertain.message_id).toBeNull();
    expect(uncertain.idempotency_key).toBe(queued.idempotency_key);
    expect(uncertain.idempotency_key).toBe(`followup:${enrollment.id}:a:${(await world.sql<{ step: number }>(`SELECT step FROM "${world.schema('followups')}".effects WHERE id = $1`, [uncertain.id]))[0]!.step}`);

    const listed = await dispatcher.resolution.listAmbiguous({ organization_id: org });
    const entry = listed.items.find((i) => i.idempotency_key === uncertain.idempotency_key);
    expect(entry).toMatchObject({ status: 'ambiguous', to: `+${waId}`, attempts: 1 });
    expect(texts[0]!.body.biz_opaque_callback_data).toBe(entry!.id);
  });
});
