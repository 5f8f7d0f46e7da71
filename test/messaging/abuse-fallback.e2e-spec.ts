import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { AbuseEvents, OutboxCommands } from '@touchpoint/contracts';
import { createTestWorld, eventually, publishEvent, type TestWorld } from '@touchpoint/testing';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { type InboundPipeline, inboundPipeline } from './inbound-pipeline.js';
import { inboundText, newWamid, outboxEvents, registerSender, restrictInReadModel } from './helpers.js';

/** Seed 004 "When the Check Itself Fails": the abuse service is not running in this world. */
describe('inbound when the abuse check fails', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sut: InboundPipeline;
  const org = `org-${randomUUID()}`;
  const pnid = `pn-${randomUUID()}`;
  const m = () => world.schema('messaging');
  let ts = 1_760_100_000;

  beforeAll(async () => {
    world = await createTestWorld('abusefail');
    app = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '300' })));
    sut = inboundPipeline(app);
    await registerSender(world, org, pnid);
  });
  afterAll(() => world.close());

  const stored = async (wamid: string) => (await world.sql(`SELECT 1 FROM "${m()}".messages WHERE external_id = $1`, [wamid])).length;

  it('fails open: with no restriction in force the message is processed normally', async () => {
    const wamid = newWamid();
    expect(await sut.whatsapp(inboundText(wamid, '5511960001111', 'hello', ts++, pnid))).toMatchObject({ stored: 1 });
    expect(await stored(wamid)).toBe(1);
  });

  it('fails closed: an active block in the read model denies the message and sends the access-restricted reply', async () => {
    const from = '5511960002222';
    const first = newWamid();
    await sut.whatsapp(inboundText(first, from, 'first', ts++, pnid));
    const [{ contact_id }] = await world.sql<{ contact_id: string }>(`SELECT contact_id FROM "${m()}".messages WHERE external_id = $1`, [first]);
    // The block arrives the way it does in production: an abuse.action.applied event.
    const action = await restrictInReadModel(world, { organization_id: org, contact_id }, 'block', 7 * 86_400_000);

    const wamid = newWamid();
    expect(await sut.whatsapp(inboundText(wamid, from, 'let me in', ts++, pnid))).toMatchObject({ stored: 0, denied: 1 });
    expect(await stored(wamid)).toBe(0);
    const replies = (await outboxEvents<{ idempotency_key: string }>(world, 'messaging', OutboxCommands.Enqueue)).filter((e) => e.payload.data.idempotency_key === `reply:${wamid}:access_restricted`);
    expect(replies).toHaveLength(1);

    // The block expires: the same contact fails open again.
    await publishEvent(world, AbuseEvents.ActionExpired, org, { action: { ...action, status: 'expired' } });
    await eventually(async () => (await world.sql<{ status: string }>(`SELECT status FROM "${m()}".abuse_restrictions WHERE action_id = $1`, [action.action_id]))[0].status === 'expired');
    const later = newWamid();
    expect(await sut.whatsapp(inboundText(later, from, 'back', ts++, pnid))).toMatchObject({ stored: 1 });
  });

  it('fails open on a throttle: only a block or suspension is access control, so a throttle in force does not deny when the check fails', async () => {
    const from = '5511960004444';
    const first = newWamid();
    await sut.whatsapp(inboundText(first, from, 'first', ts++, pnid));
    const [{ contact_id }] = await world.sql<{ contact_id: string }>(`SELECT contact_id FROM "${m()}".messages WHERE external_id = $1`, [first]);
    await restrictInReadModel(world, { organization_id: org, contact_id }, 'throttle', 3_600_000);

    const wamid = newWamid();
    expect(await sut.whatsapp(inboundText(wamid, from, 'still there?', ts++, pnid))).toMatchObject({ stored: 1, denied: 0 });
    expect(await stored(wamid)).toBe(1);
    const replies = (await outboxEvents<{ idempotency_key: string }>(world, 'messaging', OutboxCommands.Enqueue)).filter((e) => e.payload.data.idempotency_key === `reply:${wamid}:access_restricted`);
    expect(replies).toHaveLength(0);
  });

  it('aborts (service_unavailable: the receipt worker tries again later) when the read model itself cannot be read, storing nothing', async () => {
    const wamid = newWamid();
    await world.sql(`ALTER TABLE "${m()}".abuse_restrictions RENAME TO abuse_restrictions_away`);
    try {
      await expect(sut.whatsapp(inboundText(wamid, '5511960003333', 'hello?', ts++, pnid))).rejects.toMatchObject({ code: 'service_unavailable' });
    } finally {
      await world.sql(`ALTER TABLE "${m()}".abuse_restrictions_away RENAME TO abuse_restrictions`);
    }
    expect(await stored(wamid)).toBe(0);
    // The redelivery, once the read model is back, is stored.
    expect(await sut.whatsapp(inboundText(wamid, '5511960003333', 'hello?', ts, pnid))).toMatchObject({ stored: 1 });
  });
});
