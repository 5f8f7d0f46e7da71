import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { aConnectedSender, aFlow, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { WakeSignal } from '@touchpoint/runtime';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import { startFollowups } from './followups-world.js';

const GAP_MS = 60_000;

/** Per-number pacing and the monthly quota of follow-up sends (seed 000 "pacing", "monthly quota → defer"). */
describe(`${ReleaseService.name} pacing and quota`, () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sut: ReleaseService;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));
  const org = randomUUID();
  const sender = randomUUID();
  let flowId: string;

  beforeAll(async () => {
    world = await createTestWorld('fu_pacing');
    app = await startFollowups(world, { clock, env: { FOLLOWUP_SENDER_GAP_MS: String(GAP_MS) } });
    sut = app.get(ReleaseService);
    await aConnectedSender(world, org, { sender_id: sender });
    const flows = app.get(FlowsService);
    const flow = await flows.create({ organization_id: org, name: 'one text', ...aFlow() });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
    flowId = flow.id;
  });
  afterAll(() => world.close());

  const s = () => world.schema('followups');
  async function enrollContactWhoWrote(): Promise<string> {
    const contactId = randomUUID();
    await world.sql(`INSERT INTO "${s()}".contacts (organization_id, contact_id, last_inbound_at) VALUES ($1, $2, $3)`, [org, contactId, new Date(clock.now().getTime() - 60_000)]);
    const { enrollment } = await app.get(EnrollmentsService).create({ organization_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID() });
    return enrollment.id;
  }
  const row = async (id: string) => (await world.sql<Record<string, unknown> & { id: string; next_run_at: Date }>(`SELECT * FROM "${s()}".enrollments WHERE id = $1`, [id]))[0];
  const sends = async (id: string) => world.sql<Record<string, unknown>>(`SELECT * FROM "${s()}".effects WHERE enrollment_id = $1 AND kind = 'send'`, [id]);

  it('spaces releases on one number by the gap', async () => {
    const first = await enrollContactWhoWrote();
    const second = await enrollContactWhoWrote();
    expect(await sut.releaseOne()).toBe('released');
    expect(await sut.releaseOne()).toBe('released');
    const [a, b] = await Promise.all([row(first), row(second)]);
    const queued = [a, b].filter((r) => r.status === 'completed');
    const paced = [a, b].filter((r) => r.status === 'active');
    expect(queued).toHaveLength(1);
    expect(paced).toHaveLength(1);
    expect(paced[0].next_run_at.getTime()).toBe(clock.now().getTime() + GAP_MS);
    expect(await sends(paced[0].id)).toEqual([]);
    const [pacing] = await world.sql<{ next_release_at: Date }>(`SELECT next_release_at FROM "${s()}".sender_pacing WHERE sender_id = $1`, [sender]);
    expect(pacing.next_release_at.getTime()).toBe(clock.now().getTime() + GAP_MS);

    clock.advance(GAP_MS);
    expect(await sut.releaseOne()).toBe('released');
    expect(await row(paced[0].id)).toMatchObject({ status: 'completed' });
    expect(await sends(paced[0].id)).toEqual([expect.objectContaining({ status: 'queued', sender_id: sender })]);
  });

  it('defers sends over the monthly quota by 30 minutes, counting the sends made earlier that month', async () => {
    const settings = app.get(SettingsService);
    const current = await settings.get(org);
    await settings.update({ organization_id: org, expected_revision: current.revision, monthly_send_quota: 3 });
    // Two sends so far this month (the test above); one more fits.
    clock.advance(GAP_MS);
    const fits = await enrollContactWhoWrote();
    expect(await sut.releaseOne()).toBe('released');
    expect(await row(fits)).toMatchObject({ status: 'completed' });
    clock.advance(GAP_MS);
    const over = await enrollContactWhoWrote();
    expect(await sut.releaseOne()).toBe('released');
    const deferred = await row(over);
    expect(deferred).toMatchObject({ status: 'active', node_id: 'a' });
    expect(deferred.next_run_at.getTime()).toBe(clock.now().getTime() + 30 * 60_000);
    const [usage] = await world.sql<{ sends: number }>(`SELECT sends FROM "${s()}".monthly_usage WHERE organization_id = $1`, [org]);
    expect(usage.sends).toBe(3);
    const plans = await world.sql(`SELECT reason FROM "${s()}".effects WHERE enrollment_id = $1 AND kind = 'schedule_plan'`, [over]);
    expect(plans).toEqual([{ reason: 'monthly_quota' }]);
  });
});

/**
 * The release workers keep a number's pace, not the poll's: a send deferred by the number's gap is
 * released when the gap ends, though the idle workers poll far less often (the tester saw a queue
 * on one number go out at 1/s with a 250 ms gap).
 */
describe(`${ReleaseService.name} pacing with the release loop running`, () => {
  const GAP = 200;
  const POLL = 5000;
  const SENDS = 6;
  let world: TestWorld;

  beforeAll(async () => {
    world = await createTestWorld('fu_pace_loop');
  });
  afterAll(() => world.close());

  it('releases the queue of one number one gap apart', async () => {
    const app = await startFollowups(world, { env: { FOLLOWUP_RELEASE_ENABLED: 'true', FOLLOWUP_RELEASE_CONCURRENCY: '2', FOLLOWUP_POLL_MS: String(POLL), FOLLOWUP_SENDER_GAP_MS: String(GAP), FOLLOWUP_SENDER_INFLIGHT_WINDOW: '0' } });
    const s = world.schema('followups');
    const org = randomUUID();
    await aConnectedSender(world, org, { sender_id: randomUUID() });
    const flows = app.get(FlowsService);
    const flow = await flows.create({ organization_id: org, name: 'one text', ...aFlow() });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    await world.sql(
      `WITH c AS (INSERT INTO "${s}".contacts (organization_id, contact_id, last_inbound_at)
                  SELECT $1::uuid, gen_random_uuid(), now() - interval '1 minute' FROM generate_series(1, $4::int) RETURNING contact_id)
       INSERT INTO "${s}".enrollments (id, organization_id, flow_id, version_id, contact_id, operation_key, status, node_id, step, next_run_at, cancel_on_reply, handoff_policy, reply_seen_at, handoff_seen_at)
       SELECT gen_random_uuid(), $1, $2, $3, contact_id, 'pace-' || contact_id, 'active', 'a', 1, now(), true, 'pause', now(), now() FROM c`,
      [org, flow.id, published.published_version_id, SENDS],
    );
    // Other work wakes the process's loops all the time (enrollments, stops, triggers): a worker
    // woken while it waits for the gap must not lose the moment.
    const signal = app.get(WakeSignal);
    const wakes = setInterval(() => signal.wake(), 70);
    try {
      // Activation wakes the workers; from then on only the gap may hold a send back.
      await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
      await eventually(async () => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}".effects WHERE organization_id = $1 AND kind = 'send'`, [org]))[0].n === SENDS, 30_000, 100);
    } finally {
      clearInterval(wakes);
    }
    const sends = await world.sql<{ created_at: Date }>(`SELECT created_at FROM "${s}".effects WHERE organization_id = $1 AND kind = 'send' ORDER BY created_at`, [org]);
    const gaps = sends.slice(1).map((r, i) => r.created_at.getTime() - sends[i]!.created_at.getTime());
    // The pace held, and no send waited for a poll (5 s) instead of the gap (0.2 s).
    expect(gaps.every((g) => g >= GAP - 5)).toBe(true);
    expect(Math.max(...gaps)).toBeLessThan(POLL / 2);
  });
});
