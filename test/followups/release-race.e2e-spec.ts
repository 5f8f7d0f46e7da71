import { randomUUID } from 'node:crypto';
import { OutboxEvents } from '@touchpoint/contracts';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { ReleaseLoop } from '../../apps/followups/src/release/release.loop.js';
import { ALWAYS_OPEN, publishEvent, startFollowups } from './followups-world.js';

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

  it('never releases one step twice', async () => {
    const env = { FOLLOWUP_RELEASE_ENABLED: 'true', FOLLOWUP_RELEASE_CONCURRENCY: '4', FOLLOWUP_POLL_MS: '100' };
    const first = await startFollowups(world, { env });
    await startFollowups(world, { env });
    const schema = world.schema('followups');
    const org = randomUUID();
    const sender = randomUUID();
    await publishEvent(world, OutboxEvents.SenderConnected, org, { sender_id: sender, channel: 'whatsapp', is_default: true, status: 'connected' });
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${schema}".senders WHERE sender_id = $1`, [sender])).length === 1);

    const flows = first.get(FlowsService);
    const flow = await flows.create({
      organization_id: org,
      name: 'race',
      graph: {
        nodes: [
          { id: 't', type: 'trigger', config: {} },
          { id: 'a', type: 'action', config: { mode: 'text', body: 'Oi' } },
          { id: 'e', type: 'end', config: {} },
        ],
        edges: [
          { id: 'e1', source: 't', target: 'a', condition: { type: 'always' } },
          { id: 'e2', source: 'a', target: 'e', condition: { type: 'always' } },
        ],
      },
      settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN },
    });
    // Not active while the rows go in (a worker that claims one parks it; activation wakes it).
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    // Contacts who wrote a minute ago (24-hour window open), and their due enrollments, in bulk.
    await world.sql(
      `WITH c AS (INSERT INTO "${schema}".contacts (organization_id, contact_id, last_inbound_at)
                  SELECT $1::uuid, gen_random_uuid(), now() - interval '1 minute' FROM generate_series(1, $4::int) RETURNING contact_id)
       INSERT INTO "${schema}".enrollments (id, organization_id, flow_id, version_id, contact_id, operation_key, status, node_id, step, next_run_at, cancel_on_reply, handoff_policy, reply_seen_at, handoff_seen_at)
       SELECT gen_random_uuid(), $1, $2, $3, contact_id, 'race-' || contact_id, 'active', 'a', 1, now(), true, 'pause', now(), now() FROM c`,
      [org, flow.id, published.published_version_id, ENROLLMENTS],
    );
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });

    await eventually(async () => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".enrollments WHERE status = 'completed'`))[0].n === ENROLLMENTS, 60_000, 200);
    const [effects] = await world.sql<{ n: number; keys: number; enrollments: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys, count(DISTINCT enrollment_id)::int AS enrollments FROM "${schema}".effects WHERE kind = 'send'`,
    );
    expect(effects).toEqual({ n: ENROLLMENTS, keys: ENROLLMENTS, enrollments: ENROLLMENTS });
    const [commands] = await world.sql<{ n: number; ids: number }>(`SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS ids FROM "${schema}".outbox_events WHERE type = 'messaging.send'`);
    expect(commands).toEqual({ n: ENROLLMENTS, ids: ENROLLMENTS });
    // No worker ever tripped on a step another had released (that would show as a failure).
    const [failures] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".enrollments WHERE failures > 0 OR last_error IS NOT NULL`);
    expect(failures.n).toBe(0);
  });
});
