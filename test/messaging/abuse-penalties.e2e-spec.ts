import { jest } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { AbuseCheckData, AbuseCheckOutcome, AbuseVerdict } from '@touchpoint/contracts';
import { createTestWorld, TEST_DATABASE_URL, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { AbuseRepository } from '../../apps/abuse/src/check/abuse.repository.js';
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
  describe('checkBatch', () => {
    /** A verdict without what differs between two runs of the same messages (action ids, the contact's id). */
    const comparable = (o: AbuseCheckOutcome) => {
      if (!('verdict' in o)) return o;
      const { action, ...rest } = o.verdict;
      return { ...rest, action: action ? { action_type: action.action_type, offense_number: action.offense_number, reason: action.reason, expires_at: action.expires_at } : null };
    };
    const counters = async (conversations: string[]) =>
      world.sql(`SELECT minute_count, hourly_count, daily_count, is_throttled, throttled_until, throttle_limit, total_count, jsonb_array_length(recent) AS recent FROM "${abuse()}".rate_counters WHERE conversation_id = ANY($1) ORDER BY array_position($1, conversation_id)`, [
        conversations,
      ]);

    it('gives each message the verdict `check` gives one by one, in order: limits, a penalty that denies the rest of the batch, a repeated message, the instance cap', async () => {
      clock.set(new Date('2026-06-01T10:00:00Z'));
      /** The same messages for two sets of people: `tag` tells them apart. */
      const script = (tag: string) => {
        const [ana, bia, cid] = [`c-${tag}-ana`, `c-${tag}-bia`, `c-${tag}-cid`];
        const [va, vb, vc] = [`v-${tag}-ana`, `v-${tag}-bia`, `v-${tag}-cid`];
        const repeated = input(cid, vc, 'the same message twice', { message_ref: `wamid.${tag}.repeated` });
        return {
          conversations: [va, vb, vc],
          // Bia had one offense already (a warning): her next one is a throttle, and her message after it is refused.
          before: Array.from({ length: 5 }, () => input(bia, vb, 'BUY NOW cheap pills')),
          batch: [
            ...Array.from({ length: 7 }, (_, i) => input(ana, va, `question ${i}`)),
            ...Array.from({ length: 5 }, () => input(bia, vb, 'BUY NOW cheap pills')),
            input(bia, vb, 'and one more'),
            repeated,
            repeated,
            input(cid, vc, 'at the cap', { instance_message_count: 500 }),
          ],
        };
      };
      const tag = randomUUID().slice(0, 8);
      const oneByOne = script(`one-${tag}`);
      const together = script(`all-${tag}`);
      for (const i of [...oneByOne.before, ...together.before]) await sut.check(i);
      clock.advance(61_000);

      const expected: AbuseCheckOutcome[] = [];
      for (const i of oneByOne.batch) expected.push({ verdict: await sut.check(i) });
      // In one transaction: no conversation's counters were locked on their own (the one-by-one way).
      const alone = jest.spyOn(app.get(AbuseRepository), 'lockCounters');
      const outcomes = await sut.checkBatch(together.batch);
      expect(alone).not.toHaveBeenCalled();
      alone.mockRestore();

      expect(outcomes.map(comparable)).toEqual(expected.map(comparable));
      const verdicts = outcomes.map((o) => (o as { verdict: AbuseVerdict }).verdict);
      expect(verdicts.slice(5, 7).map((v) => v.limit_type)).toEqual(['minute', 'minute']);
      expect(verdicts[11]).toMatchObject({ allowed: false, limit_type: 'throttled', action: { action_type: 'throttle', offense_number: 2 } });
      expect(verdicts[12]).toMatchObject({ allowed: false, limit_type: 'throttled', action: null });
      expect(verdicts[15]).toMatchObject({ allowed: false, limit_type: 'instance' });
      expect(await counters(together.conversations)).toEqual(await counters(oneByOne.conversations));
    });

    it('answers a check that lacks a required field with its error, and the others with their verdicts', async () => {
      const contact = `c-${randomUUID()}`;
      const outcomes = await sut.checkBatch([input(contact, `v-${randomUUID()}`, 'first'), { ...input(contact, `v-${randomUUID()}`, 'no conversation'), conversation_id: '' }, input(contact, `v-${randomUUID()}`, 'third')]);
      expect(outcomes).toEqual([{ verdict: expect.objectContaining({ allowed: true }) }, { error: { code: 'validation_failed', message: 'conversation_id is required' } }, { verdict: expect.objectContaining({ allowed: true }) }]);
    });

    it('checks each message on its own when a counter row is held past the lock timeout, counting each once', async () => {
      const [held, free] = [`v-${randomUUID()}`, `v-${randomUUID()}`];
      await sut.check(input(`c-${randomUUID()}`, held, 'opens the row'));
      const other = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await other.connect();
      try {
        await other.query('BEGIN');
        await other.query(`SELECT 1 FROM "${abuse()}".rate_counters WHERE conversation_id = $1 FOR UPDATE`, [held]);
        const batch = sut.checkBatch([input(`c-${randomUUID()}`, held, 'waits'), input(`c-${randomUUID()}`, free, 'goes')]);
        // Past the batch's lock timeout: it rolled back, and the free conversation was counted on its own.
        await new Promise((r) => setTimeout(r, 600));
        const [row] = await world.sql<{ total_count: string }>(`SELECT total_count FROM "${abuse()}".rate_counters WHERE conversation_id = $1`, [free]);
        expect(Number(row?.total_count)).toBe(1);
        await other.query('ROLLBACK');
        expect((await batch).map((o) => 'verdict' in o && o.verdict.allowed)).toEqual([true, true]);
      } finally {
        await other.end();
      }
      const rows = await world.sql<{ conversation_id: string; total_count: string }>(`SELECT conversation_id, total_count FROM "${abuse()}".rate_counters WHERE conversation_id = ANY($1) ORDER BY conversation_id`, [[held, free]]);
      expect(Object.fromEntries(rows.map((r) => [r.conversation_id, Number(r.total_count)]))).toEqual({ [held]: 2, [free]: 1 });
    });
  });
});
