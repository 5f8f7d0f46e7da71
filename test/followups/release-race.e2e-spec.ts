import { randomUUID } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { aConnectedSender, aFlow, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseLoop } from '../../apps/followups/src/release/release.loop.js';
import { startFollowups } from './followups-world.js';

const ENROLLMENTS = 400;

/**
 * Two followups processes (each with several release workers) race for the same due steps: the
 * claim's SKIP LOCKED and the per-step unique effect must make every step go out exactly once.
 */
describe(`${ReleaseLoop.name} (two processes)`, () => {
  let world: TestWorld;

  beforeAll(async () => {
    world = await createTestWorld('fu_race');
  });
  afterAll(() => world.close());

  /**
   * A connected sender and a published, not yet active one-text flow in a new organization, and
   * `count` contacts who wrote a minute ago (24-hour window open) with their enrollments due now,
   * inserted in bulk (a worker that claims one before activation parks it; activation wakes it).
   */
  async function publishedFlowWithDueEnrollments(app: NestFastifyApplication, name: string, count: number) {
    const schema = world.schema('followups');
    const org = randomUUID();
    await aConnectedSender(world, org, { sender_id: randomUUID() });
    const flows = app.get(FlowsService);
    const flow = await flows.create({ organization_id: org, name, ...aFlow() });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    const ids = await world.sql<{ id: string }>(
      `WITH c AS (INSERT INTO "${schema}".contacts (organization_id, contact_id, last_inbound_at)
                  SELECT $1::uuid, gen_random_uuid(), now() - interval '1 minute' FROM generate_series(1, $4::int) RETURNING contact_id)
       INSERT INTO "${schema}".enrollments (id, organization_id, flow_id, version_id, contact_id, operation_key, status, node_id, step, next_run_at, cancel_on_reply, handoff_policy, reply_seen_at, handoff_seen_at)
       SELECT gen_random_uuid(), $1, $2, $3, contact_id, $5 || '-' || contact_id, 'active', 'a', 1, now(), true, 'pause', now(), now() FROM c RETURNING id`,
      [org, flow.id, published.published_version_id, count, name],
    );
    return { org, flow, published, ids };
  }

  it('never releases one step twice', async () => {
    // No dispatcher reports these sends accepted: the in-flight window is off so all of them release.
    const env = { FOLLOWUP_RELEASE_ENABLED: 'true', FOLLOWUP_RELEASE_CONCURRENCY: '4', FOLLOWUP_POLL_MS: '100', FOLLOWUP_SENDER_INFLIGHT_WINDOW: '0' };
    const first = await startFollowups(world, { env });
    await startFollowups(world, { env });
    const schema = world.schema('followups');
    const { org, flow, published } = await publishedFlowWithDueEnrollments(first, 'race', ENROLLMENTS);
    const flows = first.get(FlowsService);
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });

    await eventually(async () => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".enrollments WHERE status = 'completed'`))[0].n === ENROLLMENTS, 60_000, 200);
    const [effects] = await world.sql<{ n: number; keys: number; enrollments: number }>(`SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys, count(DISTINCT enrollment_id)::int AS enrollments FROM "${schema}".effects WHERE kind = 'send'`);
    expect(effects).toEqual({ n: ENROLLMENTS, keys: ENROLLMENTS, enrollments: ENROLLMENTS });
    const [commands] = await world.sql<{ n: number; ids: number }>(`SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS ids FROM "${schema}".outbox_events WHERE type = 'messaging.send'`);
    expect(commands).toEqual({ n: ENROLLMENTS, ids: ENROLLMENTS });
    // No worker ever tripped on a step another had released (that would show as a failure).
    const [failures] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".enrollments WHERE failures > 0 OR last_error IS NOT NULL`);
    expect(failures.n).toBe(0);
  });

  it('releases one at a time after a batch fails as a whole, so an outbox insert that keeps failing lands on its own enrollment', async () => {
    const app = await startFollowups(world, { env: { FOLLOWUP_RELEASE_ENABLED: 'true', FOLLOWUP_RELEASE_CONCURRENCY: '1', FOLLOWUP_RELEASE_BATCH: '16', FOLLOWUP_POLL_MS: '100' } });
    const schema = world.schema('followups');
    const { org, flow, published, ids } = await publishedFlowWithDueEnrollments(app, 'poison', 6);
    const flows = app.get(FlowsService);
    const poison = ids[0].id;
    // The fault: every outbox insert that carries the poison enrollment's send fails. In a batch
    // it fails the one insert of all rows, which no single step can be blamed for.
    await world.sql(`CREATE FUNCTION "${schema}".fail_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'outbox refused'; END $$`);
    await world.sql(`CREATE TRIGGER fail_poison BEFORE INSERT ON "${schema}".outbox_events FOR EACH ROW WHEN (NEW.event_id LIKE 'followup:${poison}:%') EXECUTE FUNCTION "${schema}".fail_poison()`);
    try {
      await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
      const others = ids.slice(1).map((r) => r.id);
      await eventually(async () => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".enrollments WHERE id = ANY($1::uuid[]) AND status = 'completed'`, [others]))[0].n === others.length, 20_000, 100);
      const [row] = await eventually(
        async () => {
          const rows = await world.sql<{ failures: number; last_error: string; status: string }>(`SELECT failures, last_error, status FROM "${schema}".enrollments WHERE id = $1 AND failures > 0`, [poison]);
          return rows.length ? rows : null;
        },
        20_000,
        100,
      );
      expect(row).toMatchObject({ status: 'active', failures: 1 });
      expect(row.last_error).toContain('outbox refused');
      expect((await world.sql(`SELECT 1 FROM "${schema}".effects WHERE enrollment_id = $1`, [poison])).length).toBe(0);
    } finally {
      await world.sql(`DROP TRIGGER fail_poison ON "${schema}".outbox_events`);
    }
  });
});
