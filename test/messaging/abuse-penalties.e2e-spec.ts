import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import type { AbuseCheckData } from '@touchpoint/contracts';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { AbuseCheckService } from '../../apps/abuse/src/check/abuse-check.service.js';
import { ExpiryService } from '../../apps/abuse/src/penalties/expiry.service.js';

describe(AbuseCheckService.name, () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sut: AbuseCheckService;
  const clock = new FixedClock(new Date('2026-03-02T09:00:10Z'));
  const org = `org-${randomUUID()}`;

  beforeAll(async () => {
    world = await createTestWorld('abuse');
    app = await world.start(AbuseModule.forRoot(world.config(AbuseConfig, { ABUSE_EXPIRY_INTERVAL_MS: '0' }), { clock }));
    sut = app.get(AbuseCheckService);
  });
  afterAll(() => world.close());

  const abuse = () => world.schema('abuse');
  let seq = 0;
  const input = (contact: string, conversation: string, text: string, extra: Partial<AbuseCheckData> = {}): AbuseCheckData => ({
    organization_id: org,
    contact_id: contact,
    conversation_id: conversation,
    instance_id: 'i-1',
    instance_message_count: 0,
    channel: 'whatsapp',
    message_ref: `wamid.${++seq}`,
    text,
    sent_at: clock.now().toISOString(),
    ...extra,
  });

  describe('check', () => {
    it('walks the penalty ladder: warning, 15 min, 1 h, 24 h throttles, then a 7-day block', async () => {
      const contact = `c-${randomUUID()}`;
      const conversation = `v-${randomUUID()}`;
      const offense = async () => {
        // Five identical messages sent at once: the 5th shows spam and flooding, one offense.
        let last;
        for (let i = 0; i < 5; i++) last = await sut.check(input(contact, conversation, 'BUY NOW cheap pills'));
        return last!;
      };

      const first = await offense();
      expect(first).toMatchObject({ allowed: true, action: { action_type: 'warning', offense_number: 1 } });
      expect(first.patterns.sort()).toEqual(['flooding', 'spam']);

      const expectations: [string, number, string][] = [
        ['throttle', 15 * 60_000, 'throttled'],
        ['throttle', 3600_000, 'throttled'],
        ['throttle', 24 * 3600_000, 'throttled'],
        ['block', 7 * 24 * 3600_000, 'blocked'],
      ];
      for (const [index, [type, ms, limit]] of expectations.entries()) {
        clock.advance(61_000); // out of the minute window of the previous batch
        const verdict = await offense();
        expect(verdict).toMatchObject({ allowed: false, limit_type: limit, action: { action_type: type, offense_number: index + 2 } });
        expect(Date.parse(verdict.action!.expires_at) - Date.parse(verdict.action!.starts_at)).toBe(ms);
        // In force: the next message is denied until it expires.
        expect(await sut.check(input(contact, conversation, 'hello?'))).toMatchObject({ allowed: false, limit_type: limit, reset_at: verdict.action!.expires_at });
        clock.set(new Date(Date.parse(verdict.action!.expires_at) + 1000));
      }

      const actions = await world.sql<{ action_type: string; offense_number: number; status: string }>(`SELECT action_type, offense_number, status FROM "${abuse()}".abuse_actions WHERE contact_id = $1 ORDER BY offense_number`, [contact]);
      expect(actions.map((a) => `${a.offense_number}:${a.action_type}`)).toEqual(['1:warning', '2:throttle', '3:throttle', '4:throttle', '5:block']);
      const applied = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${abuse()}".outbox_events WHERE type = 'abuse.action.applied' AND payload->'data'->'action'->>'contact_id' = $1`, [contact]);
      expect(applied[0].n).toBe(5);

      // Expiry: every throttle and the block are past their end now; the sweep ends and announces them.
      const expired = await app.get(ExpiryService).expireDue();
      expect(expired).toBeGreaterThanOrEqual(4);
      const events = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${abuse()}".outbox_events WHERE type = 'abuse.action.expired' AND payload->'data'->'action'->>'contact_id' = $1`, [contact]);
      expect(events[0].n).toBe(4);
      expect(await sut.check(input(contact, conversation, 'I am back'))).toMatchObject({ allowed: true });
    });

    it('forgets offenses older than 30 days', async () => {
      const contact = `c-${randomUUID()}`;
      const conversation = `v-${randomUUID()}`;
      for (let i = 0; i < 5; i++) await sut.check(input(contact, conversation, 'same same'));
      clock.advance(31 * 24 * 3600_000);
      let last;
      for (let i = 0; i < 5; i++) last = await sut.check(input(contact, conversation, 'same same'));
      expect(last!.action).toMatchObject({ action_type: 'warning', offense_number: 1 });
    });

    it('denies the sixth message in a minute and lifts the throttle at the next whole minute', async () => {
      clock.set(new Date('2026-05-01T10:00:00Z'));
      const contact = `c-${randomUUID()}`;
      const conversation = `v-${randomUUID()}`;
      for (let i = 0; i < 5; i++) {
        clock.advance(3000);
        expect((await sut.check(input(contact, conversation, `question number ${i}`))).allowed).toBe(true);
      }
      clock.advance(3000);
      expect(await sut.check(input(contact, conversation, 'one more'))).toMatchObject({ allowed: false, limit_type: 'minute', reset_at: '2026-05-01T10:01:00.000Z' });
      clock.set(new Date('2026-05-01T10:01:00Z'));
      expect((await sut.check(input(contact, conversation, 'now fine'))).allowed).toBe(true);
    });

    it('doubles the limits for the seeded premium tier', async () => {
      clock.set(new Date('2026-05-02T10:00:00Z'));
      const contact = `c-${randomUUID()}`;
      const conversation = `v-${randomUUID()}`;
      const verdicts = [];
      for (let i = 0; i < 11; i++) {
        clock.advance(3000);
        verdicts.push((await sut.check(input(contact, conversation, `premium question ${i}`, { user_type: 'premium' }))).allowed);
      }
      expect(verdicts.filter(Boolean).length).toBe(10);
      expect(await sut.check(input(contact, conversation, 'x', { user_type: 'premium', instance_message_count: 999 }))).toMatchObject({ allowed: false });
      const [cfg] = await world.sql<{ per_instance: number }>(`SELECT per_instance FROM "${abuse()}".rate_limit_config WHERE user_type = 'premium'`);
      expect(cfg.per_instance).toBe(1000);
    });

    it('answers the instance verdict (roll over, reset_at null) at the cap without counting the message', async () => {
      clock.set(new Date('2026-05-03T10:00:00Z'));
      const contact = `c-${randomUUID()}`;
      const conversation = `v-${randomUUID()}`;
      expect(await sut.check(input(contact, conversation, 'hi', { instance_message_count: 500 }))).toEqual({ allowed: false, limit_type: 'instance', reset_at: null, action: null, patterns: [] });
      expect((await sut.check(input(contact, conversation, 'hi', { instance_message_count: 499 }))).allowed).toBe(true);
      const [row] = await world.sql<{ total_count: string }>(`SELECT total_count FROM "${abuse()}".rate_counters WHERE conversation_id = $1`, [conversation]);
      expect(Number(row.total_count)).toBe(1);
    });

    it('does not count a redelivered message twice', async () => {
      const contact = `c-${randomUUID()}`;
      const conversation = `v-${randomUUID()}`;
      const once = input(contact, conversation, 'hello');
      await sut.check(once);
      await sut.check(once);
      const [row] = await world.sql<{ total_count: string }>(`SELECT total_count FROM "${abuse()}".rate_counters WHERE conversation_id = $1`, [conversation]);
      expect(Number(row.total_count)).toBe(1);
    });
  });
});
