import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type FlowGraph, type FlowSettings, MessagingEvents, OutboxEvents } from '@touchpoint/contracts';
import { aConnectedSender, aContactWhoWrote, ALWAYS_OPEN, anActiveFlow, aTwoTextFlow, createTestWorld, eventually, HOUR, publishEvent, type TestWorld, aMessageReceived } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { SEED_002_FLOW_EXAMPLE } from '@touchpoint/contracts';
import { FollowupsMetrics } from '../../apps/followups/src/metrics/followups.metrics.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
/** Rows as these tests read them (SELECT *): the columns they use typed, every other column `unknown`. */
type EnrollmentRow = Row & { revision: number; next_run_at: Date };
type EffectRow = Row & { id: string; idempotency_key: string; created_at: Date };
/** A command written to the outbox (`messaging.send`, `outbox.cancel`). */
type BusCommand = { payload: { data: Record<string, unknown> & { text?: string } } };

/**
 * The release engine (seed 000 "Release", "Stop paths and ordering", "Failure behaviour") against
 * the real database and broker, with the loop stopped and a clock the test moves: each test
 * releases by hand and asserts on rows and on the messages followups queued in its outbox.
 */
describe(ReleaseService.name, () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sut: ReleaseService;
  let flows: FlowsService;
  let enrollments: EnrollmentsService;
  let schema: string;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z')); // Tuesday 10:00 in São Paulo
  const org = randomUUID();
  const sender = randomUUID();

  beforeAll(async () => {
    world = await createTestWorld('fu_release');
    app = await startFollowups(world, { clock, env: { FOLLOWUP_MAX_FAILURES: '3' } });
    sut = app.get(ReleaseService);
    flows = app.get(FlowsService);
    enrollments = app.get(EnrollmentsService);
    schema = world.schema('followups');
    await aConnectedSender(world, org, { sender_id: sender });
  });
  afterAll(() => world.close());
  // Each test releases by hand with `releaseOne`, which takes the oldest due enrollment of any test:
  // end the previous test's enrollments so they never become due in the next one.
  afterEach(() => world.sql(`UPDATE "${world.schema('followups')}".enrollments SET status = 'cancelled', next_run_at = NULL WHERE status <> 'cancelled'`));

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const enrollment = async (id: string) => (await sql<EnrollmentRow>(`SELECT * FROM fu.enrollments WHERE id = $1`, [id]))[0];
  const effects = (id: string) => sql<EffectRow>(`SELECT * FROM fu.effects WHERE enrollment_id = $1 ORDER BY created_at, kind`, [id]);
  const sendCommands = (enrollmentId: string) => sql<BusCommand>(`SELECT payload FROM fu.outbox_events WHERE type = 'messaging.send' AND event_id LIKE $1 ORDER BY id`, [`followup:${enrollmentId}:%`]);

  const activeFlow = (graph: FlowGraph, settings: FlowSettings) => anActiveFlow(flows, org, { graph, settings });

  /** A contact that wrote `agoMs` ago (so the 24-hour window is open) — via messaging's event. */
  const contactWhoWrote = (agoMs = HOUR) => aContactWhoWrote(world, org, clock.now(), agoMs);

  const enroll = async (flowId: string, contactId: string, extra: Record<string, unknown> = {}) => (await enrollments.create({ organization_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID(), ...extra })).enrollment;

  const control = async (id: string, action: 'pause' | 'resume' | 'cancel' | 'advance_now') => {
    const row = await enrollment(id);
    return enrollments.control({ organization_id: org, enrollment_id: id, expected_revision: row.revision, action });
  };

  /** trigger → text → wait → text → end, window always open. */
  const twoTexts = (waitMs = HOUR, cancelOnReply = true): [FlowGraph, FlowSettings] => {
    const { graph, settings } = aTwoTextFlow({ waitMs, cancelOnReply });
    return [graph, settings];
  };

  describe('the seed 002 example', () => {
    it('waits 4 h, runs the wait now on advance_now, queues the text through messaging.send and completes', async () => {
      const flowId = await activeFlow(SEED_002_FLOW_EXAMPLE.graph, SEED_002_FLOW_EXAMPLE.settings);
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      expect(e).toMatchObject({ status: 'active', node_id: 'espera', next_run_at: new Date(clock.now().getTime() + 4 * HOUR).toISOString() });
      expect(await sut.releaseOne()).toBe('idle');

      await control(e.id, 'advance_now');
      expect(await sut.releaseOne()).toBe('released');
      const row = await enrollment(e.id);
      expect(row).toMatchObject({ status: 'completed', reason: 'exhausted', node_id: 'fim', failures: 0 });
      const [effect] = await effects(e.id);
      expect(effect).toMatchObject({ kind: 'send', status: 'queued', node_id: 'lembrete', text: 'Oi! Conseguiu ver a proposta que enviamos?', sender_id: sender });
      expect(effect.idempotency_key).toBe(`followup:${e.id}:lembrete:2`);
      expect(row.inflight_effect_id).toBe(effect.id);
      const [command] = await sendCommands(e.id);
      expect(command.payload).toMatchObject({
        event_id: effect.idempotency_key,
        type: 'messaging.send',
        organization_id: org,
        data: { idempotency_key: effect.idempotency_key, channel: 'whatsapp', contact_id: contactId, text: 'Oi! Conseguiu ver a proposta que enviamos?', sender_type: 'followup', requester: 'followups', outbox_sender_id: sender },
      });

      // Messaging reports the send: the effect is sent and nothing is in flight any more.
      await publishEvent(world, MessagingEvents.MessageSent, org, { message_id: randomUUID(), conversation_id: randomUUID(), contact_id: contactId, channel: 'whatsapp', idempotency_key: effect.idempotency_key, requester: 'followups', status: 'sent' });
      await eventually(async () => (await effects(e.id))[0].status === 'sent');
      expect((await enrollment(e.id)).inflight_effect_id).toBeNull();
    });
  });

  describe('the sending number', () => {
    it('sender mode last_conversation sends from the number the contact last wrote to, not the default one', async () => {
      const other = randomUUID();
      await publishEvent(world, OutboxEvents.SenderConnected, org, { sender_id: other, channel: 'whatsapp', is_default: false, status: 'connected' });
      await eventually(async () => (await sql(`SELECT 1 FROM fu.senders WHERE sender_id = $1`, [other])).length === 1);
      const [graph, settings] = twoTexts();
      const flowId = await activeFlow(graph, { ...settings, sender: { mode: 'last_conversation' } });
      const contactId = randomUUID();
      // The contact wrote to the second number (messaging names the dispatcher sender it arrived on).
      await publishEvent(
        world,
        MessagingEvents.MessageReceived,
        org,
        {
          message_id: randomUUID(),
          conversation_id: randomUUID(),
          instance_id: randomUUID(),
          contact_id: contactId,
          channel: 'whatsapp',
          direction: 'inbound',
          external_id: 'wamid.y',
          text: 'oi',
          message_type: 'text',
          auto_reply: false,
          opt_out: false,
          from: '+5592988886666',
          sender_id: other,
        },
        new Date(clock.now().getTime() - HOUR),
      );
      await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);
      const e = await enroll(flowId, contactId);
      expect(await sut.releaseOne()).toBe('released');
      const [effect] = await effects(e.id);
      expect(effect).toMatchObject({ kind: 'send', status: 'queued', node_id: 'a1', sender_id: other });
      const [command] = await sendCommands(e.id);
      expect(command.payload.data).toMatchObject({ idempotency_key: effect.idempotency_key, outbox_sender_id: other });
    });
  });

  describe('checks before a send', () => {
    it('skips a free-text send outside the 24-hour window (no template fallback)', async () => {
      const flowId = await activeFlow(...twoTexts());
      const contactId = await contactWhoWrote(25 * HOUR);
      const e = await enroll(flowId, contactId);
      expect(await sut.releaseOne()).toBe('released');
      const [effect] = await effects(e.id);
      expect(effect).toMatchObject({ kind: 'send', status: 'skipped', reason: 'outside_service_window' });
      expect(await sendCommands(e.id)).toEqual([]);
      expect(await enrollment(e.id)).toMatchObject({ status: 'active', node_id: 'w' });
    });

    it('defers a send outside the flow window to the next opening, with a schedule plan (São Paulo, seed window)', async () => {
      const flowId = await activeFlow(...twoTexts());
      clock.set(new Date('2026-10-03T15:00:00Z')); // Saturday noon in São Paulo
      try {
        const contactId = await contactWhoWrote();
        const flow = await flows.get({ organization_id: org, flow_id: flowId });
        const settings = { ...SEED_002_FLOW_EXAMPLE.settings };
        const saved = await flows.update({ organization_id: org, flow_id: flowId, expected_revision: flow.revision, name: flow.name, graph: flow.graph, settings });
        await flows.publish({ organization_id: org, flow_id: flowId, expected_revision: saved.revision });
        const e = await enroll(flowId, contactId);
        expect(await sut.releaseOne()).toBe('released');
        expect((await enrollment(e.id)).next_run_at.toISOString()).toBe('2026-10-05T12:00:00.000Z');
        expect(await effects(e.id)).toEqual([expect.objectContaining({ kind: 'schedule_plan', reason: 'send_window', usage: { planned_at: '2026-10-05T12:00:00.000Z' } })]);
        expect(await sut.releaseOne()).toBe('idle');
        clock.set(new Date('2026-10-05T12:00:00Z'));
        expect(await sut.releaseOne()).toBe('released');
        expect((await effects(e.id)).map((x) => x.kind).sort()).toEqual(['schedule_plan', 'send']);
      } finally {
        clock.set(new Date('2026-10-06T13:00:00Z'));
      }
    });

    it('defers across the New York spring-forward change to Monday 09:00 EDT', async () => {
      const [graph] = twoTexts();
      const flowId = await activeFlow(graph, { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', send_start_hour: 9, send_end_hour: 17, send_days: [1, 2, 3, 4, 5], timezone: 'America/New_York' });
      clock.set(new Date('2026-03-06T23:00:00Z')); // Friday 18:00 EST
      try {
        const contactId = await contactWhoWrote();
        const e = await enroll(flowId, contactId);
        expect(await sut.releaseOne()).toBe('released');
        expect((await enrollment(e.id)).next_run_at.toISOString()).toBe('2026-03-09T13:00:00.000Z');
      } finally {
        clock.set(new Date('2026-10-06T13:00:00Z'));
      }
    });

    it('defers the second send of a contact over the 24 h cap until the first leaves the window', async () => {
      const flowId = await activeFlow(...twoTexts(10 * 60_000));
      const settings = app.get(SettingsService);
      const current = await settings.get(org);
      await settings.update({ organization_id: org, expected_revision: current.revision, contact_daily_cap: 1 });
      try {
        const contactId = await contactWhoWrote();
        const e = await enroll(flowId, contactId);
        expect(await sut.releaseOne()).toBe('released');
        const first = (await effects(e.id)).find((x) => x.kind === 'send');
        clock.advance(10 * 60_000);
        expect(await sut.releaseOne()).toBe('released');
        const row = await enrollment(e.id);
        expect(row.node_id).toBe('a2');
        expect(row.next_run_at.getTime()).toBe(first!.created_at.getTime() + 24 * HOUR + 1000);
        expect((await effects(e.id)).filter((x) => x.kind === 'send')).toHaveLength(1);
      } finally {
        clock.set(new Date('2026-10-06T13:00:00Z'));
        const now = await settings.get(org);
        await settings.update({ organization_id: org, expected_revision: now.revision, contact_daily_cap: 3 });
      }
    });

    it('parks an enrollment while its flow is paused and resumes it when the flow is active again', async () => {
      const flowId = await activeFlow(...twoTexts());
      const e = await enroll(flowId, await contactWhoWrote());
      const flow = await flows.get({ organization_id: org, flow_id: flowId });
      await flows.setStatus({ organization_id: org, flow_id: flowId, expected_revision: flow.revision, status: 'paused' });
      expect(await sut.releaseOne()).toBe('released');
      expect(await enrollment(e.id)).toMatchObject({ status: 'dormente', reason: 'flow_paused' });
      await flows.setStatus({ organization_id: org, flow_id: flowId, expected_revision: flow.revision + 1, status: 'active' });
      expect(await enrollment(e.id)).toMatchObject({ status: 'active', reason: null });
      expect(await sut.releaseOne()).toBe('released');
      expect((await effects(e.id))[0]).toMatchObject({ kind: 'send', status: 'queued' });
    });
  });

  describe('faults', () => {
    it('retries a busy contact in 2 s without waiting for its lock, and changes nothing else', async () => {
      const flowId = await activeFlow(...twoTexts());
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      const holder = new pg.Client({ connectionString: world.databaseUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM "${schema}".contacts WHERE contact_id = $1 FOR UPDATE`, [contactId]);
        const started = Date.now();
        expect(await sut.releaseOne()).toBe('busy');
        expect(Date.now() - started).toBeLessThan(1000);
        const row = await enrollment(e.id);
        expect(row).toMatchObject({ status: 'active', node_id: 'a1', step: 1, failures: 0 });
        expect(row.next_run_at.getTime()).toBe(clock.now().getTime() + 2000);
        expect(await effects(e.id)).toEqual([]);
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
      }
      clock.advance(2000);
      try {
        expect(await sut.releaseOne()).toBe('released');
        expect((await effects(e.id))[0]).toMatchObject({ status: 'queued' });
      } finally {
        clock.set(new Date('2026-10-06T13:00:00Z'));
      }
    });

    it('leaves nothing half-done when a release fails inside its transaction, backs off 30 s, and marks dead after the limit', async () => {
      const flowId = await activeFlow(...twoTexts());
      const e = await enroll(flowId, await contactWhoWrote());
      // The fault: the effect insert (after the claim, the checks and the pacing) fails.
      await sql(`CREATE FUNCTION fu.fail_effects() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$`);
      await sql(`CREATE TRIGGER fail_effects BEFORE INSERT ON fu.effects FOR EACH ROW EXECUTE FUNCTION fu.fail_effects()`);
      try {
        const outboxBefore = (await sql(`SELECT count(*)::int AS n FROM fu.outbox_events`))[0].n;
        expect(await sut.releaseOne()).toBe('failed');
        const row = await enrollment(e.id);
        expect(row).toMatchObject({ status: 'active', node_id: 'a1', step: 1, failures: 1, inflight_effect_id: null });
        expect(row.last_error).toContain('disk on fire');
        expect(row.next_run_at.getTime()).toBe(clock.now().getTime() + 30_000);
        expect(await effects(e.id)).toEqual([]);
        expect((await sql(`SELECT count(*)::int AS n FROM fu.outbox_events`))[0].n).toBe(outboxBefore);

        clock.advance(30_000);
        expect(await sut.releaseOne()).toBe('failed');
        expect((await enrollment(e.id)).next_run_at.getTime()).toBe(clock.now().getTime() + 60_000);
        clock.advance(60_000);
        expect(await sut.releaseOne()).toBe('failed');
        expect(await enrollment(e.id)).toMatchObject({ status: 'dead', reason: 'too_many_failures', failures: 3, next_run_at: null });
      } finally {
        await sql(`DROP TRIGGER fail_effects ON fu.effects`);
        await sql(`DROP FUNCTION fu.fail_effects()`);
        clock.set(new Date('2026-10-06T13:00:00Z'));
      }
    });
  });

  describe('group commit (releaseBatch)', () => {
    const sendEffects = (ids: string[]) => sql(`SELECT enrollment_id, status, xmin::text AS tx FROM fu.effects WHERE kind = 'send' AND enrollment_id = ANY($1::uuid[])`, [ids]);

    it('releases several due enrollments in one transaction, one step and one send each', async () => {
      const flowId = await activeFlow(...twoTexts());
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await enroll(flowId, await contactWhoWrote())).id);

      expect(await sut.releaseBatch(10)).toBe(3);
      const sends = await sendEffects(ids);
      expect(sends.map((x) => x.enrollment_id).sort()).toEqual([...ids].sort());
      expect(new Set(sends.map((x) => x.tx)).size).toBe(1);
      for (const id of ids) {
        expect(await enrollment(id)).toMatchObject({ status: 'active', node_id: 'w', step: 2 });
        expect(await sendCommands(id)).toHaveLength(1);
      }
      // Each moved one step: the waits are not due, so nothing more is claimed.
      expect(await sut.releaseBatch(10)).toBe(0);
    });

    it('rolls the batch back when one step throws, records the failure on that enrollment only, and releases the others on the next claim', async () => {
      const flowId = await activeFlow(...twoTexts());
      const [first, poison, last] = [await enroll(flowId, await contactWhoWrote()), await enroll(flowId, await contactWhoWrote()), await enroll(flowId, await contactWhoWrote())];
      // The middle one of the claim order points at a node its version does not have.
      await sql(`UPDATE fu.enrollments SET node_id = 'ghost', next_run_at = $2 WHERE id = $1`, [poison.id, new Date(clock.now().getTime() - 1000)]);
      await sql(`UPDATE fu.enrollments SET next_run_at = $2 WHERE id = $1`, [first.id, new Date(clock.now().getTime() - 2000)]);
      const outboxBefore = (await sql(`SELECT count(*)::int AS n FROM fu.outbox_events`))[0].n;
      const queuedSends = async () => (await app.get(FollowupsMetrics).steps.get()).values.find((v) => v.labels.action === 'send' && v.labels.outcome === 'queued')?.value ?? 0;
      const countedBefore = await queuedSends();

      expect(await sut.releaseBatch(10)).toBe(3);
      // The first row's send was rolled back with the batch: not counted.
      expect(await queuedSends()).toBe(countedBefore);
      const failed = await enrollment(poison.id);
      expect(failed).toMatchObject({ status: 'active', node_id: 'ghost', failures: 1 });
      expect(failed.last_error).toContain('ghost');
      expect(failed.next_run_at.getTime()).toBe(clock.now().getTime() + 30_000);
      // The first row's step ran before the failure and was rolled back with it.
      for (const id of [first.id, last.id]) expect(await enrollment(id)).toMatchObject({ status: 'active', node_id: 'a1', step: 1, failures: 0 });
      expect(await sendEffects([first.id, poison.id, last.id])).toEqual([]);
      expect((await sql(`SELECT count(*)::int AS n FROM fu.outbox_events`))[0].n).toBe(outboxBefore);

      expect(await sut.releaseBatch(10)).toBe(2);
      expect((await sendEffects([first.id, poison.id, last.id])).map((x) => x.enrollment_id).sort()).toEqual([first.id, last.id].sort());
      expect(await queuedSends()).toBe(countedBefore + 2);
    });

    it("counts a send queued earlier in the same batch against the contact's 24 h cap", async () => {
      const settings = app.get(SettingsService);
      const current = await settings.get(org);
      await settings.update({ organization_id: org, expected_revision: current.revision, contact_daily_cap: 1 });
      try {
        const contactId = await contactWhoWrote();
        const a = await enroll(await activeFlow(...twoTexts()), contactId);
        const b = await enroll(await activeFlow(...twoTexts()), contactId);
        expect(await sut.releaseBatch(10)).toBe(2);
        const sends = await sendEffects([a.id, b.id]);
        expect(sends).toHaveLength(1);
        const deferred = await enrollment(sends[0].enrollment_id === a.id ? b.id : a.id);
        expect(deferred).toMatchObject({ status: 'active', node_id: 'a1', step: 1 });
        expect(deferred.next_run_at.getTime()).toBe(clock.now().getTime() + 24 * HOUR + 1000);
      } finally {
        const now = await settings.get(org);
        await settings.update({ organization_id: org, expected_revision: now.revision, contact_daily_cap: 3 });
      }
    });

    it("holds the contact's 24 h cap when four workers' batches reach one contact at once (the contact is theirs one at a time)", async () => {
      const settings = app.get(SettingsService);
      await settings.update({ organization_id: org, expected_revision: (await settings.get(org)).revision, contact_daily_cap: 3 });
      const contactId = await contactWhoWrote();
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await enroll(await activeFlow(...twoTexts()), contactId)).id);
      try {
        // A worker that finds the contact held by another moves the row on by seconds; rounds go on
        // (bounded) until every row is sent or waiting out the cap, however the races fell.
        const heldOut = async () => (await sql(`SELECT count(*)::int AS n FROM fu.enrollments WHERE id = ANY($1::uuid[]) AND node_id = 'a1' AND next_run_at > $2`, [ids, new Date(clock.now().getTime() + 23 * HOUR)]))[0].n as number;
        for (let round = 0; round < 30 && (await sendEffects(ids)).length + (await heldOut()) < ids.length; round++) {
          await Promise.all(
            Array.from({ length: 4 }, async () => {
              while ((await sut.releaseBatch(2)) > 0);
            }),
          );
          clock.advance(2000);
        }
        expect(await sendEffects(ids)).toHaveLength(3);
        expect(await heldOut()).toBe(9);
      } finally {
        clock.set(new Date('2026-10-06T13:00:00Z'));
      }
    });

    it('never releases one step twice when four workers claim batches at once', async () => {
      const flowId = await activeFlow(...twoTexts());
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push((await enroll(flowId, await contactWhoWrote())).id);
      const claimed = await Promise.all(
        Array.from({ length: 4 }, async () => {
          let n = 0;
          for (let got = -1; got !== 0; n += got) got = await sut.releaseBatch(7);
          return n;
        }),
      );
      expect(claimed.reduce((a, b) => a + b, 0)).toBe(40);
      const sends = await sendEffects(ids);
      expect(sends).toHaveLength(40);
      expect(new Set(sends.map((x) => x.enrollment_id)).size).toBe(40);
      const commands = await sql(`SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS d FROM fu.outbox_events WHERE type = 'messaging.send' AND event_id LIKE ANY($1)`, [ids.map((id) => `followup:${id}:%`)]);
      expect(commands[0]).toEqual({ n: 40, d: 40 });
    });
  });

  describe('the reply wins', () => {
    const reply = (contactId: string, text = 'Já vi, obrigado', extra: Record<string, unknown> = {}) =>
      publishEvent(world, MessagingEvents.MessageReceived, org, aMessageReceived(contactId, { external_id: `wamid.${randomUUID()}`, text, ...extra }), new Date(clock.now().getTime() + 1000));
    const cancels = (key: string) => sql<BusCommand>(`SELECT payload FROM fu.outbox_events WHERE type = 'outbox.cancel' AND payload->'data'->>'idempotency_key' = $1`, [key]);

    it('stops the enrollment and asks the dispatcher to cancel a follow-up still queued', async () => {
      const flowId = await activeFlow(...twoTexts());
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      await sut.releaseOne();
      const [queued] = await effects(e.id);
      expect(queued.status).toBe('queued');
      await reply(contactId);
      await eventually(async () => (await enrollment(e.id)).status === 'completed');
      expect(await enrollment(e.id)).toMatchObject({ reason: 'replied', next_run_at: null });
      expect(await cancels(queued.idempotency_key)).toEqual([expect.objectContaining({ payload: expect.objectContaining({ data: { organization_id: org, idempotency_key: queued.idempotency_key } }) })]);
      // The dispatcher had not claimed it: it reports the cancel, and the effect is cancelled.
      await publishEvent(world, OutboxEvents.EntryCancelled, org, { entry_id: randomUUID(), idempotency_key: queued.idempotency_key, channel: 'whatsapp', to: '+5592988887777', log_context: {} });
      await eventually(async () => (await effects(e.id))[0].status === 'cancelled');
      clock.advance(2 * HOUR);
      try {
        expect(await sut.releaseOne()).toBe('idle');
        expect(await sendCommands(e.id)).toHaveLength(1);
      } finally {
        clock.set(new Date('2026-10-06T13:00:00Z'));
      }
    });

    it('leaves a follow-up the dispatcher already claimed as sent, and stops the rest', async () => {
      const flowId = await activeFlow(...twoTexts());
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      await sut.releaseOne();
      const [queued] = await effects(e.id);
      await reply(contactId);
      await eventually(async () => (await enrollment(e.id)).status === 'completed');
      // Too late to cancel: the send lane had it, and it went out.
      await publishEvent(world, MessagingEvents.MessageSent, org, { message_id: randomUUID(), conversation_id: randomUUID(), contact_id: contactId, channel: 'whatsapp', idempotency_key: queued.idempotency_key, requester: 'followups', status: 'sent' });
      await eventually(async () => (await effects(e.id))[0].status === 'sent');
      clock.advance(2 * HOUR);
      try {
        expect(await sut.releaseOne()).toBe('idle');
        expect(await sendCommands(e.id)).toHaveLength(1);
        expect(await enrollment(e.id)).toMatchObject({ status: 'completed', reason: 'replied' });
      } finally {
        clock.set(new Date('2026-10-06T13:00:00Z'));
      }
    });

    it('orders a reply that arrives during a release after it: the queued send is cancelled', async () => {
      const flowId = await activeFlow(...twoTexts());
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      // Slow the release down inside its transaction, after it holds the enrollment and the contact.
      await sql(`CREATE FUNCTION fu.slow_effects() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$`);
      await sql(`CREATE TRIGGER slow_effects BEFORE INSERT ON fu.effects FOR EACH ROW EXECUTE FUNCTION fu.slow_effects()`);
      try {
        const releasing = sut.releaseOne();
        await new Promise((r) => setTimeout(r, 400));
        await reply(contactId);
        expect(await releasing).toBe('released');
      } finally {
        await sql(`DROP TRIGGER slow_effects ON fu.effects`);
        await sql(`DROP FUNCTION fu.slow_effects()`);
      }
      await eventually(async () => (await enrollment(e.id)).status === 'completed');
      const [queued] = await effects(e.id);
      expect(queued.status).toBe('queued');
      expect(await cancels(queued.idempotency_key)).toHaveLength(1);
    });

    it('takes the replied exit of a reply wait and matches keywords accent- and case-insensitively', async () => {
      const graph: FlowGraph = {
        nodes: [
          { id: 't', type: 'trigger', config: {} },
          { id: 'ask', type: 'action', config: { mode: 'text', body: 'Confirma?' } },
          { id: 'wr', type: 'wait', config: { mode: 'reply', timeout_ms: 2 * HOUR } },
          {
            id: 'm',
            type: 'match_reply',
            config: {
              branches: [
                { id: 'yes', keywords: ['sim', 'confirmo'] },
                { id: 'no', keywords: ['não posso'] },
              ],
            },
          },
          { id: 'ok', type: 'end', config: { outcome: 'confirmed' } },
          { id: 'ko', type: 'end', config: { outcome: 'declined' } },
          { id: 'other', type: 'end', config: { outcome: 'other' } },
          { id: 'silent', type: 'end', config: { outcome: 'no_reply' } },
        ],
        edges: [
          { id: 'e1', source: 't', target: 'ask', condition: { type: 'always' } },
          { id: 'e2', source: 'ask', target: 'wr', condition: { type: 'always' } },
          { id: 'e3', source: 'wr', target: 'm', condition: { type: 'branch', branch_id: 'replied' } },
          { id: 'e4', source: 'wr', target: 'silent', condition: { type: 'branch', branch_id: 'timeout' } },
          { id: 'e5', source: 'm', target: 'ok', condition: { type: 'branch', branch_id: 'yes' } },
          { id: 'e6', source: 'm', target: 'ko', condition: { type: 'branch', branch_id: 'no' } },
          { id: 'e7', source: 'm', target: 'other', condition: { type: 'branch', branch_id: 'default' } },
        ],
      };
      const flowId = await activeFlow(graph, { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN });
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      await sut.releaseOne();
      expect(await enrollment(e.id)).toMatchObject({ status: 'waiting_reply', node_id: 'wr' });
      await reply(contactId, 'NAO POSSO, desculpe');
      await eventually(async () => (await enrollment(e.id)).status === 'active');
      expect(await sut.releaseOne()).toBe('released');
      expect(await enrollment(e.id)).toMatchObject({ status: 'completed', reason: 'declined' });
    });

    it('cancels every live enrollment of a contact who opts out', async () => {
      const flowId = await activeFlow(...twoTexts());
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      await reply(contactId, 'pare', { opt_out: true });
      await eventually(async () => (await enrollment(e.id)).status === 'cancelled');
      expect(await enrollment(e.id)).toMatchObject({ reason: 'opted_out' });
      await expect(enroll(flowId, contactId)).rejects.toMatchObject({ code: 'conflict', details: { reason: 'opted_out' } });
    });

    it('pauses on a human message (handoff_policy pause) and the control route answers dispatch_busy while a send is in flight', async () => {
      const flowId = await activeFlow(...twoTexts());
      const contactId = await contactWhoWrote();
      const e = await enroll(flowId, contactId);
      await sut.releaseOne();
      await expect(control(e.id, 'pause')).rejects.toMatchObject({ code: 'dispatch_busy' });
      await publishEvent(world, MessagingEvents.HumanMessageSent, org, { message_id: randomUUID(), conversation_id: randomUUID(), contact_id: contactId, channel: 'whatsapp', operator_id: null }, new Date(clock.now().getTime() + 1000));
      await eventually(async () => (await enrollment(e.id)).status === 'paused_handoff');
      const [queued] = await effects(e.id);
      expect(await cancels(queued.idempotency_key)).toHaveLength(1);
    });
  });
});
