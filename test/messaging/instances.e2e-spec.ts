import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { AiGatewayConfig } from '../../apps/ai-gateway/src/ai-gateway.config.js';
import { AiGatewayModule } from '../../apps/ai-gateway/src/ai-gateway.module.js';
import { InstancesService } from '../../apps/messaging/src/conversations/instances.service.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { SendService } from '../../apps/messaging/src/sending/send.service.js';

describe(InstancesService.name, () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sut: InstancesService;
  const clock = new FixedClock(new Date('2026-06-01T08:00:00Z'));
  const org = `org-${randomUUID()}`;
  const m = () => world.schema('messaging');

  beforeAll(async () => {
    world = await createTestWorld('instances');
    // ai-gateway with no model configured: every summary answers `unavailable`.
    await world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig, { AI_BASE_URL: 'none' })));
    app = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARY_TIMEOUT_MS: '1000' }), { clock }));
    sut = app.get(InstancesService);
  });
  afterAll(() => world.close());

  const instanceOf = async (conversationId: string) =>
    world.sql<{ status: string; auto_closed_reason: string | null; summary_attempts: number }>(`SELECT status, auto_closed_reason, summary_attempts FROM "${m()}".conversation_instances WHERE conversation_id = $1 ORDER BY instance_number`, [conversationId]);

  describe('closeIdle', () => {
    it('closes an instance idle for 8 h (time_limit) and not one idle for 7 h 59 min', async () => {
      clock.set(new Date('2026-06-01T08:00:00Z'));
      const sent = await app.get(SendService).send({ organization_id: org, idempotency_key: `k:${randomUUID()}`, channel: 'whatsapp', to: '+5511987001122', sender_type: 'system', requester: 'test', text: 'hi' });

      clock.set(new Date('2026-06-01T15:59:00Z'));
      await sut.closeIdle(clock.now());
      expect(await instanceOf(sent.conversation_id)).toEqual([{ status: 'active', auto_closed_reason: null, summary_attempts: 0 }]);

      clock.set(new Date('2026-06-01T16:00:00Z'));
      await sut.closeIdle(clock.now());
      expect(await instanceOf(sent.conversation_id)).toEqual([{ status: 'closed', auto_closed_reason: 'time_limit', summary_attempts: 0 }]);

      // The next message opens a new instance rather than joining the closed one.
      const next = await app.get(SendService).send({ organization_id: org, idempotency_key: `k:${randomUUID()}`, channel: 'whatsapp', to: '+5511987001122', sender_type: 'system', requester: 'test', text: 'again' });
      expect(next.instance_id).not.toBe(sent.instance_id);
      expect((await instanceOf(sent.conversation_id)).map((i) => i.status)).toEqual(['closed', 'active']);
    });

    it('measures idleness from the last message, not from the start', async () => {
      clock.set(new Date('2026-06-02T00:00:00Z'));
      const send = (text: string) => app.get(SendService).send({ organization_id: org, idempotency_key: `k:${randomUUID()}`, channel: 'whatsapp', to: '+5511987003344', sender_type: 'system', requester: 'test', text });
      const first = await send('one');
      clock.set(new Date('2026-06-02T06:00:00Z'));
      await send('two');
      clock.set(new Date('2026-06-02T09:00:00Z'));
      await sut.closeIdle(clock.now());
      expect((await instanceOf(first.conversation_id))[0].status).toBe('active');
      clock.set(new Date('2026-06-02T14:00:00Z'));
      await sut.closeIdle(clock.now());
      expect((await instanceOf(first.conversation_id))[0]).toMatchObject({ status: 'closed', auto_closed_reason: 'time_limit' });
    });
  });

  describe('sweep', () => {
    it('leaves a closed instance closed when no model is configured, and the sweep retries it later', async () => {
      clock.set(new Date('2026-06-03T00:00:00Z'));
      const sent = await app.get(SendService).send({ organization_id: org, idempotency_key: `k:${randomUUID()}`, channel: 'whatsapp', to: '+5511987005566', sender_type: 'system', requester: 'test', text: 'x' });
      clock.set(new Date('2026-06-03T09:00:00Z'));
      const first = await sut.sweep();
      expect(first.summarized).toBe(0);
      const [after] = await instanceOf(sent.conversation_id);
      expect(after).toMatchObject({ status: 'closed', auto_closed_reason: 'time_limit' });
      // The sweep asked ai-gateway (oldest closed instance first), recorded the failure, and stopped asking.
      const [tried] = await world.sql<{ n: number; summarized: number }>(`SELECT count(*) FILTER (WHERE summary_attempts >= 1)::int AS n, count(*) FILTER (WHERE status = 'summarized')::int AS summarized FROM "${m()}".conversation_instances`);
      expect(tried).toEqual({ n: 1, summarized: 0 });
      const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${m()}".conversation_summaries`);
      expect(n).toBe(0);
      // Messaging goes on: a new send to the contact works.
      await expect(app.get(SendService).send({ organization_id: org, idempotency_key: `k:${randomUUID()}`, channel: 'whatsapp', to: '+5511987005566', sender_type: 'system', requester: 'test', text: 'y' })).resolves.toMatchObject({ status: 'queued' });
    });
  });
});
