import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import pg from 'pg';
import { FollowupsRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { ALWAYS_OPEN, createTestWorld, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { RETENTION_LOCK_KEY, RetentionService } from '../../apps/followups/src/retention/retention.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
const DAY = 86_400_000;

/** Retention (seed 000 "Retention"): only what is past its time goes, per organization; one pass at a time. */
describe('Follow-up retention', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let schema: string;
  const now = new Date('2026-10-06T13:00:00Z');
  const clock = new FixedClock(now);
  const shortOrg = randomUUID(); // retention_days 30
  const defaultOrg = randomUUID(); // never saved settings: 90 days
  const flowOf: Record<string, { flow: string; version: string }> = {};

  beforeAll(async () => {
    world = await createTestWorld('fu_retention');
    followups = await startFollowups(world, { clock });
    schema = world.schema('followups');
    await followups.get(SettingsService).update({ organization_id: shortOrg, expected_revision: 0, retention_days: 30 });
    const flows = followups.get(FlowsService);
    for (const org of [shortOrg, defaultOrg]) {
      const flow = await flows.create({
        organization_id: org,
        name: 'retention',
        graph: {
          nodes: [
            { id: 't', type: 'trigger', config: {} },
            { id: 'e', type: 'end', config: {} },
          ],
          edges: [{ id: 'e1', source: 't', target: 'e', condition: { type: 'always' } }],
        },
        settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN },
      });
      const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
      flowOf[org] = { flow: flow.id, version: published.published_version_id! };
    }
  });
  afterAll(() => world.close());

  const sql = (text: string, params?: unknown[]) => world.sql<Row>(text.replaceAll('fu.', `"${schema}".`), params);
  const ago = (days: number) => new Date(now.getTime() - days * DAY);

  async function enrollment(org: string, status: string, finishedDaysAgo: number | null): Promise<string> {
    const id = randomUUID();
    const { flow, version } = flowOf[org]!;
    await sql(
      `INSERT INTO fu.enrollments (id, organization_id, flow_id, version_id, contact_id, operation_key, status, cancel_on_reply, handoff_policy, created_at, finished_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, true, 'pause', $8, $9)`,
      [id, org, flow, version, randomUUID(), randomUUID(), status, ago(400), finishedDaysAgo === null ? null : ago(finishedDaysAgo)],
    );
    await sql(`INSERT INTO fu.enrollment_events (organization_id, enrollment_id, type, data) VALUES ($1, $2, 'completed', '{}')`, [org, id]);
    await sql(`INSERT INTO fu.effects (id, organization_id, enrollment_id, contact_id, node_id, step, kind, status) VALUES ($1, $2, $3, $4, 'a', 1, 'send', 'sent')`, [randomUUID(), org, id, randomUUID()]);
    return id;
  }

  async function promise(org: string, status: string, updatedDaysAgo: number): Promise<string> {
    const id = randomUUID();
    await sql(
      `INSERT INTO fu.promises (id, organization_id, contact_id, operation_key, reason, promise, promised_at, due_at, outside_window, status, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'r', 'p', $5, $5, 'alert', $6, $5, $5)`,
      [id, org, randomUUID(), randomUUID(), ago(updatedDaysAgo), status],
    );
    return id;
  }

  async function trigger(org: string, processedDaysAgo: number | null): Promise<string> {
    const [row] = await sql(`INSERT INTO fu.triggers (organization_id, type, event_id, contact_id, processed_at, created_at) VALUES ($1, 'lead_created', $2, $3, $4, $5) RETURNING id`, [
      org,
      randomUUID(),
      randomUUID(),
      processedDaysAgo === null ? null : ago(processedDaysAgo),
      ago(60),
    ]);
    return String(row!.id);
  }

  async function bulkJob(org: string, status: string, finishedDaysAgo: number | null): Promise<string> {
    const id = randomUUID();
    await sql(
      `INSERT INTO fu.bulk_jobs (id, organization_id, flow_id, operation_key, source, contact_ids, total, status, created_at, finished_at)
       VALUES ($1, $2, $3, $4, '{"kind": "list"}', '{}', 0, $5, $6, $7)`,
      [id, org, flowOf[org]!.flow, randomUUID(), status, ago(100), finishedDaysAgo === null ? null : ago(finishedDaysAgo)],
    );
    return id;
  }

  it('retention deletes only what is past its time (per organization), with the timeline and effects of what it deletes', async () => {
    const gone = {
      enrollments: [await enrollment(shortOrg, 'completed', 31), await enrollment(shortOrg, 'dead', 45), await enrollment(defaultOrg, 'cancelled', 91)],
      promises: [await promise(shortOrg, 'completed', 31), await promise(defaultOrg, 'alerted', 91)],
      triggers: [await trigger(shortOrg, 8)],
      jobs: [await bulkJob(shortOrg, 'completed', 31)],
    };
    const kept = {
      enrollments: [
        await enrollment(shortOrg, 'completed', 29), // not yet 30 days
        await enrollment(defaultOrg, 'completed', 31), // 90 days for this organization
        await enrollment(shortOrg, 'active', null), // live, however old
        await enrollment(shortOrg, 'waiting_reply', null),
      ],
      promises: [await promise(shortOrg, 'scheduled', 200), await promise(shortOrg, 'cancelled', 29), await promise(defaultOrg, 'failed', 31)],
      triggers: [await trigger(shortOrg, 6), await trigger(shortOrg, null)],
      jobs: [await bulkJob(shortOrg, 'completed', 29), await bulkJob(shortOrg, 'running', null)],
    };

    // Through the RPC `retention:run` uses.
    const report = (await followups.get(RpcClient).callUnchecked<{ data: Record<string, unknown> }>('followups', FollowupsRpc.RetentionRun, {}, 30_000)).data;
    expect(report).toEqual({ ran: true, enrollments: 3, events: 3, effects: 3, promises: 2, triggers: 1, bulk_jobs: 1 });

    const ids = async (table: string, list: string[]) => (await sql(`SELECT id::text FROM fu.${table} WHERE id::text = ANY($1::text[])`, [list])).map((r) => r.id).sort();
    expect(await ids('enrollments', [...gone.enrollments, ...kept.enrollments])).toEqual([...kept.enrollments].sort());
    expect(await ids('promises', [...gone.promises, ...kept.promises])).toEqual([...kept.promises].sort());
    expect(await ids('triggers', [...gone.triggers, ...kept.triggers])).toEqual([...kept.triggers].sort());
    expect(await ids('bulk_jobs', [...gone.jobs, ...kept.jobs])).toEqual([...kept.jobs].sort());
    expect(await sql(`SELECT 1 FROM fu.effects WHERE enrollment_id = ANY($1::uuid[])`, [gone.enrollments])).toEqual([]);
    expect(await sql(`SELECT 1 FROM fu.enrollment_events WHERE enrollment_id = ANY($1::uuid[])`, [gone.enrollments])).toEqual([]);
    expect(await sql(`SELECT 1 FROM fu.effects WHERE enrollment_id = ANY($1::uuid[])`, [kept.enrollments])).toHaveLength(4);

    // A second pass finds nothing more.
    expect(await followups.get(RetentionService).run()).toEqual({ ran: true, enrollments: 0, events: 0, effects: 0, promises: 0, triggers: 0, bulk_jobs: 0 });
  });

  it('runs one pass at a time: while another holds the lock, a pass does nothing', async () => {
    const old = await enrollment(shortOrg, 'completed', 60);
    // Another process (a replica, the CLI) holds the pass's lock.
    const client = new pg.Client({ connectionString: world.databaseUrl });
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [RETENTION_LOCK_KEY]);
      expect((await followups.get(RetentionService).run()).ran).toBe(false);
      expect(await sql(`SELECT 1 FROM fu.enrollments WHERE id = $1`, [old])).toHaveLength(1);
    } finally {
      await client.end();
    }
    expect((await followups.get(RetentionService).run()).enrollments).toBe(1);
  });

  it('`npm run cli -- retention:run --json` runs a pass now through the service', async () => {
    const old = await enrollment(shortOrg, 'cancelled', 40);
    const child = spawn('npm', ['run', '-s', 'cli', '--', 'retention:run', '--json'], { env: { ...process.env, ...world.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null')).toMatchObject({ ran: true, enrollments: 1, events: 1, effects: 1 });
    expect(await sql(`SELECT 1 FROM fu.enrollments WHERE id = $1`, [old])).toEqual([]);
  }, 60_000);
});
