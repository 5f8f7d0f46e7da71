import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { FollowupsEvents, type MessagingStreamPage, MessagingRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, eventually, publishEvent, type TestWorld } from '@touchpoint/testing';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';

/**
 * Followups' enrollment facts reach the real-time feed (GET /events/stream reads it): before,
 * nothing consumed them, so a flow that handed a contact to a person told nobody.
 */
describe('followups facts on the messaging feed', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  const org = randomUUID();

  beforeAll(async () => {
    world = await createTestWorld('fufeed');
    app = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
  });
  afterAll(() => world.close());

  const read = (after: string) => app.get(RpcClient).callUnchecked<MessagingStreamPage>('messaging', MessagingRpc.StreamRead, { organization_id: org, after, types: ['followups.'] });

  it('shows an enrollment created, a handoff asked by a step and the finish, once each, in order', async () => {
    const start = (await app.get(RpcClient).callUnchecked<MessagingStreamPage>('messaging', MessagingRpc.StreamRead, { organization_id: org })).cursor;
    const enrollment = { enrollment_id: randomUUID(), flow_id: randomUUID(), contact_id: randomUUID() };
    const handoffId = `${FollowupsEvents.HandoffRequested}:${enrollment.enrollment_id}`;
    await publishEvent(world, FollowupsEvents.EnrollmentCreated, org, enrollment);
    await eventually(async () => (await read(start)).items.length === 1);
    const handoff = { ...enrollment, conversation_id: randomUUID(), node_id: 'handoff-1', note: 'call them 📞' };
    await publishEvent(world, FollowupsEvents.HandoffRequested, org, handoff, { eventId: handoffId });
    // A redelivery of the same event adds nothing.
    await publishEvent(world, FollowupsEvents.HandoffRequested, org, handoff, { eventId: handoffId });
    await eventually(async () => (await read(start)).items.length === 2);
    await publishEvent(world, FollowupsEvents.EnrollmentFinished, org, { ...enrollment, status: 'completed', reason: 'replied' });
    const items = await eventually(async () => {
      const page = await read(start);
      return page.items.length === 3 ? page.items : null;
    });
    expect(items!.map((i) => [i.type, i.data])).toEqual([
      [FollowupsEvents.EnrollmentCreated, enrollment],
      [FollowupsEvents.HandoffRequested, handoff],
      [FollowupsEvents.EnrollmentFinished, { ...enrollment, status: 'completed', reason: 'replied' }],
    ]);
  });
});
