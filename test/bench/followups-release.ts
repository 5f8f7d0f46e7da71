/**
 * `npm run bench:release`: the follow-up release loop of ONE followups process.
 *
 *   1. raw claim rate: one-row `FOR UPDATE SKIP LOCKED` claims on a scratch table of the same
 *      database, with as many connections as the release workers — the ceiling of any claim loop;
 *   2. 10,000 enrollments in the table, all due: per-release time;
 *   3. 1,000,000 enrollments in the table (990,000 waiting, 10,000 due): per-release time, and its
 *      ratio to (2);
 *   4. 100,000 more enrollments due now: releases/s and release lag (p50/p95/max, due → effect
 *      written).
 * Each timed phase starts once the sends of the earlier ones have reached the sandbox, so the
 * phases compare the release loop under the same load, not behind different backlogs.
 *
 * Each release is the whole step of seed 000: claim, contact lock, checks, send window, 24-hour
 * window, sender choice, per-contact cap, render, the effect row, the `messaging.send` command and
 * the finished event in the outbox, and the enrollment update. A worker's transaction holds up to
 * FOLLOWUP_RELEASE_BATCH such steps of different enrollments (group commit), each moving one step.
 * The outbox relay of the same process publishes those commands to RabbitMQ; messaging and the
 * outbox-dispatcher (each its own process, from the compiled build) turn them into WhatsApp sends
 * to the Meta sandbox. Every released contact is a distinct number, so the dispatcher's per-pair
 * pacing (6.5 s) never holds a send back; the sandbox count still trails the releases (the sends are
 * a longer pipeline than the release), and is reported with its own rate.
 * Targets (2-core reference machine): ≥ 500 releases/s; per-release time at 1M within 1.3× of 10k.
 *
 * Env: BENCH_CONCURRENCY (release workers, default 8), BENCH_BATCH (enrollments per release
 * transaction, default 16, the service's default), BENCH_DB_POOL_SIZE (default 20),
 * BENCH_HEADLINE (default 100000), BENCH_LARGE (default 1000000), BENCH_SAMPLE (default 10000),
 * BENCH_PROF (a directory: the followups process writes a `--cpu-prof` profile there).
 */
import 'reflect-metadata';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { SendersService } from '../../apps/outbox-dispatcher/src/senders/senders.service.js';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const POOL = Number(process.env.BENCH_DB_POOL_SIZE ?? 20);
const BATCH = Number(process.env.BENCH_BATCH ?? 16);
const HEADLINE = Number(process.env.BENCH_HEADLINE ?? 100_000);
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const SAMPLE = Number(process.env.BENCH_SAMPLE ?? 10_000);

const line = (label: string, value: string) => process.stdout.write(`${label.padEnd(52)} ${value}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PHONE_NUMBER_ID = '100000000000002';

type Service = ChildProcess & { tail: () => string };

/** Starts `dist/apps/<svc>/src/main.js` (the compiled build, as `npm start` runs it) on `port`. */
function startService(svc: string, env: Record<string, string>, port: number, extraArgs: string[] = []): Service {
  const child = spawn(process.execPath, [...extraArgs, `dist/apps/${svc}/src/main.js`], {
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  }) as Service;
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
  child.tail = () => stderr;
  return child;
}

async function waitReady(child: Service, url: string, svc: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (await fetch(url).then((r) => r.ok).catch(() => false)) return;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${svc} did not become ready: ${child.tail()}`);
    await sleep(200);
  }
}

/** WhatsApp `messages` calls the sandbox accepted: count, and first/last arrival (epoch ms). */
async function sandboxSends(sandboxUrl: string): Promise<{ n: number; first: number; last: number }> {
  let n = 0;
  let first = 0;
  let last = 0;
  let since = 0;
  for (;;) {
    const { calls } = (await (await fetch(`${sandboxUrl}/sandbox/control/meta/received?since_seq=${since}&limit=5000`)).json()) as {
      calls: { seq: number; at: number; operation: string; outcome: string }[];
    };
    if (!calls.length) return { n, first, last };
    for (const c of calls) {
      if (c.operation !== 'messages' || c.outcome !== 'accepted') continue;
      n++;
      first ||= c.at;
      last = c.at;
    }
    since = calls[calls.length - 1].seq;
  }
}

/** One-row claims with SKIP LOCKED from `connections` clients for `seconds`: claims/s. */
async function rawClaimRate(url: string, schema: string, connections: number, seconds: number): Promise<number> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE TABLE "${schema}".bench_claims (id bigserial PRIMARY KEY, due timestamptz NOT NULL, done boolean NOT NULL DEFAULT false)`);
  await admin.query(`INSERT INTO "${schema}".bench_claims (due) SELECT now() - make_interval(secs => g) FROM generate_series(1, 200000) g`);
  await admin.query(`CREATE INDEX ON "${schema}".bench_claims (due) WHERE NOT done`);
  await admin.query(`ANALYZE "${schema}".bench_claims`);
  let claims = 0;
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      while (Date.now() < deadline) {
        const r = await c.query(
          `UPDATE "${schema}".bench_claims SET done = true WHERE id = (SELECT id FROM "${schema}".bench_claims WHERE NOT done AND due <= now() ORDER BY due LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id`,
        );
        claims += r.rowCount ?? 0;
      }
      await c.end();
    }),
  );
  await admin.query(`DROP TABLE "${schema}".bench_claims`);
  await admin.end();
  return claims / seconds;
}

interface Fixture {
  org: string;
  flowId: string;
  versionId: string;
}

let numbersUsed = 0;

/**
 * Inserts `count` contacts (who wrote a minute ago) and their enrollments at the send node, due at
 * `due` (SQL). With `reachable`, each contact also gets a messaging contact (same id) with its own
 * WhatsApp number, so its release becomes a real send; waiting filler rows do not need one.
 */
async function insertEnrollments(world: TestWorld, f: Fixture, count: number, due: string, tag: string, reachable = false): Promise<void> {
  const s = world.schema('followups');
  const m = world.schema('messaging');
  const chunk = 100_000;
  for (let done = 0; done < count; done += chunk) {
    const n = Math.min(chunk, count - done);
    const first = numbersUsed;
    numbersUsed += n;
    const messagingContacts = reachable
      ? `, mc AS (INSERT INTO "${m}".contacts (id, organization_id, phone, created_at, updated_at)
                  SELECT id, $1::uuid::text, '55119' || lpad((10000000 + $6::int + g)::text, 8, '0'), now(), now() FROM src)`
      : '';
    await world.sql(
      `WITH src AS (SELECT gen_random_uuid() AS id, g FROM generate_series(1, $4::int) g)${messagingContacts},
            c AS (INSERT INTO "${s}".contacts (organization_id, contact_id, last_inbound_at)
                  SELECT $1::uuid, id, now() - interval '1 minute' FROM src RETURNING contact_id)
       INSERT INTO "${s}".enrollments (id, organization_id, flow_id, version_id, contact_id, operation_key, status, node_id, step, next_run_at,
                                       cancel_on_reply, handoff_policy, reply_seen_at, handoff_seen_at)
       SELECT gen_random_uuid(), $1, $2, $3, contact_id, $5 || contact_id, 'active', 'send', 1, ${due}, true, 'pause', now(), now() FROM c`,
      reachable ? [f.org, f.flowId, f.versionId, n, `${tag}-`, first] : [f.org, f.flowId, f.versionId, n, `${tag}-`],
    );
  }
  await world.sql(`ANALYZE "${s}".enrollments`);
  await world.sql(`ANALYZE "${s}".contacts`);
}

/** Makes `count` waiting enrollments of `tag` due now; answers the instant (ms) they became due. */
async function makeDue(world: TestWorld, tag: string): Promise<number> {
  const s = world.schema('followups');
  const [row] = await world.sql<{ at: Date }>(`UPDATE "${s}".enrollments SET next_run_at = clock_timestamp() WHERE operation_key LIKE $1 AND status = 'active' RETURNING clock_timestamp() AS at`, [`${tag}-%`]);
  return row.at.getTime();
}

/** Waits until every enrollment of `tag` is completed; answers the elapsed seconds since `since`. */
async function waitCompleted(world: TestWorld, tag: string, total: number, since: number): Promise<number> {
  const s = world.schema('followups');
  for (;;) {
    const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}".enrollments WHERE operation_key LIKE $1 AND status = 'completed'`, [`${tag}-%`]);
    if (n >= total) return (Date.now() - since) / 1000;
    await sleep(250);
  }
}

async function lagOf(world: TestWorld, tag: string, dueAt: number): Promise<{ p50: number; p95: number; max: number }> {
  const s = world.schema('followups');
  const [r] = await world.sql<{ p50: number; p95: number; max: number }>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY lag) AS p95, max(lag) AS max
       FROM (SELECT extract(epoch FROM f.created_at) - $2::float8 / 1000 AS lag
               FROM "${s}".effects f JOIN "${s}".enrollments e ON e.id = f.enrollment_id
              WHERE e.operation_key LIKE $1 AND f.kind = 'send') x`,
    [`${tag}-%`, dueAt],
  );
  return r;
}

async function main(): Promise<void> {
  // The services run compiled, as `npm start` and the image run them (no TypeScript loader).
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'ignore' });
  const world = await createTestWorld('bench_release');
  const children: Service[] = [];
  try {
    const s = world.schema('followups');
    const base = 21_000 + Math.floor(Math.random() * 20_000);
    const ports = { sandbox: base, messaging: base + 1, dispatcher: base + 2, followups: base + 3 };
    const sandboxUrl = `http://127.0.0.1:${ports.sandbox}`;
    const org = randomUUID();

    // Setup through the services' own rules: a published, active flow (trigger → text → end), and a
    // WhatsApp sender registered in the dispatcher (Graph base URL = the sandbox), known to followups.
    const setup = await world.start(FollowupsModule.forRoot(world.config(FollowupsConfig, { FOLLOWUP_RELEASE_ENABLED: 'false' })));
    const dispatcherEnv = { WHATSAPP_GRAPH_BASE_URL: sandboxUrl, OUTBOX_SWEEP_INTERVAL_MS: '0' };
    const dispatcherSetup = await world.start(OutboxDispatcherModule.forRoot(world.config(OutboxDispatcherConfig, { ...dispatcherEnv, OUTBOX_DRAIN_AUTOSTART: 'false' })));
    const flows = setup.get(FlowsService);
    const flow = await flows.create({
      organization_id: org,
      name: 'bench',
      graph: {
        nodes: [
          { id: 't', type: 'trigger', config: {} },
          { id: 'send', type: 'action', config: { mode: 'text', body: 'Oi! Conseguiu ver a proposta que enviamos?' } },
          { id: 'end', type: 'end', config: { outcome: 'exhausted' } },
        ],
        edges: [
          { id: 'e1', source: 't', target: 'send', condition: { type: 'always' } },
          { id: 'e2', source: 'send', target: 'end', condition: { type: 'always' } },
        ],
      },
      settings: { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' },
    });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
    const sender = await dispatcherSetup.get(SendersService).create({
      organization_id: org,
      channel: 'whatsapp',
      phone_number_id: PHONE_NUMBER_ID,
      display_phone_number: '5511912345678',
      business_account_id: '100000000000001',
      access_token: 'bench-token',
    });
    // The sender.connected event would tell followups too; the row is written here so the run does not wait on it.
    await world.sql(`INSERT INTO "${s}".senders (sender_id, organization_id, channel, status, is_default) VALUES ($1, $2, 'whatsapp', 'connected', true) ON CONFLICT DO NOTHING`, [sender.id, org]);
    const fixture: Fixture = { org, flowId: flow.id, versionId: published.published_version_id! };
    // Only the processes under test run from here on (followups' relay is the one that publishes).
    await dispatcherSetup.close();
    await setup.close();

    const raw = await rawClaimRate(world.databaseUrl, s, CONCURRENCY, 5);

    // The sandbox (status webhooks off: no gateway here), messaging, the dispatcher, and the ONE followups process under test.
    children.push(startService('sandbox', { GATEWAY_URL: 'http://127.0.0.1:9' }, ports.sandbox));
    await waitReady(children[0], `${sandboxUrl}/health/live`, 'sandbox');
    await fetch(`${sandboxUrl}/sandbox/meta/settings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status_webhooks: false }) });
    const env = { ...world.env, BUS_PREFETCH: '200' };
    children.push(startService('messaging', { ...env, DB_POOL_SIZE: '20' }, ports.messaging));
    children.push(startService('outbox-dispatcher', { ...env, ...dispatcherEnv, DB_POOL_SIZE: '20', OUTBOX_DISPATCH_CONCURRENCY: '64', OUTBOX_INSTANCE_ID: 'bench-dispatcher' }, ports.dispatcher));
    const followups = startService(
      'followups',
      {
        ...env,
        DB_POOL_SIZE: String(POOL),
        FOLLOWUP_RELEASE_ENABLED: 'true',
        FOLLOWUP_RELEASE_CONCURRENCY: String(CONCURRENCY),
        FOLLOWUP_RELEASE_BATCH: String(BATCH),
        FOLLOWUP_SENDER_GAP_MS: '0',
        // The release path alone: with one number, the in-flight window would cap the run at the dispatcher's pace.
        FOLLOWUP_SENDER_INFLIGHT_WINDOW: '0',
        FOLLOWUP_POLL_MS: '200',
      },
      ports.followups,
      process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [],
    );
    children.push(followups);
    await Promise.all([
      waitReady(children[1], `http://127.0.0.1:${ports.messaging}/health/ready`, 'messaging'),
      waitReady(children[2], `http://127.0.0.1:${ports.dispatcher}/health/ready`, 'outbox-dispatcher'),
      waitReady(followups, `http://127.0.0.1:${ports.followups}/health/ready`, 'followups'),
    ]);
    const loads: number[] = [];
    const loadTimer = setInterval(() => loads.push(os.loadavg()[0]), 5000);

    // Each timed phase starts with the send pipeline idle: until every earlier release has reached
    // the sandbox (at most 5 min), so no phase shares the machine with an earlier phase's backlog.
    let drainSeconds = 0;
    const drain = async (released: number) => {
      const started = Date.now();
      for (const stop = started + 300_000; (await sandboxSends(sandboxUrl)).n < released && Date.now() < stop; ) await sleep(1000);
      drainSeconds += (Date.now() - started) / 1000;
    };

    // Warm-up (JIT, pool connections, plan caches), so the first measured phase is not the cold one.
    await insertEnrollments(world, fixture, 2000, `now() + interval '30 days'`, 'warmup', true);
    await waitCompleted(world, 'warmup', 2000, await makeDue(world, 'warmup'));
    await drain(2000);

    // (2) 10,000 in the table, all due.
    await insertEnrollments(world, fixture, SAMPLE, `now() + interval '30 days'`, 'small', true);
    let due = await makeDue(world, 'small');
    const smallSeconds = await waitCompleted(world, 'small', SAMPLE, due);
    const smallPerRelease = (smallSeconds * 1000) / SAMPLE;

    // (4) 1,000,000 in the table: the rows so far, then waiting ones up to the total, then 10,000 due.
    const [{ n: present }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}".enrollments`);
    const filler = Math.max(0, LARGE - present - SAMPLE);
    await insertEnrollments(world, fixture, filler, `now() + make_interval(days => 1 + (random() * 60)::int)`, 'filler');
    await insertEnrollments(world, fixture, SAMPLE, `now() + interval '30 days'`, 'large', true);
    const [{ n: tableSize }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}".enrollments`);
    await drain(2000 + SAMPLE);
    due = await makeDue(world, 'large');
    const largeSeconds = await waitCompleted(world, 'large', SAMPLE, due);
    const largePerRelease = (largeSeconds * 1000) / SAMPLE;

    // (3) the headline: 100,000 due now (in a table of more than 1,000,000), each a real send to the sandbox.
    await insertEnrollments(world, fixture, HEADLINE, `now() + interval '30 days'`, 'headline', true);
    await drain(2000 + 2 * SAMPLE);
    const before = await sandboxSends(sandboxUrl);
    due = await makeDue(world, 'headline');
    const headlineSeconds = await waitCompleted(world, 'headline', HEADLINE, due);
    const atReleaseEnd = await sandboxSends(sandboxUrl);
    const lag = await lagOf(world, 'headline', due);

    // The sends still on their way: give the pipeline up to 60 s more to reach the sandbox.
    const released = 2000 + SAMPLE + HEADLINE + SAMPLE;
    let end = await sandboxSends(sandboxUrl);
    for (const stop = Date.now() + 60_000; end.n < released && Date.now() < stop; end = await sandboxSends(sandboxUrl)) await sleep(2000);
    clearInterval(loadTimer);
    // Where the sends that have not reached the sandbox are: not yet a message, or queued in the dispatcher.
    const [{ n: messages }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${world.schema('messaging')}".messages WHERE requester = 'followups'`);
    const queued = await world.sql<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM "${world.schema('outbox-dispatcher')}".message_outbox GROUP BY status ORDER BY status`);
    const headlineSent = atReleaseEnd.n - before.n;

    line('raw one-row SKIP LOCKED claims (same DB)', `${Math.round(raw)} claims/s (${CONCURRENCY} connections)`);
    line(`releases, ${HEADLINE.toLocaleString('en')} due now`, `${Math.round(HEADLINE / headlineSeconds)} releases/s (${headlineSeconds.toFixed(1)} s; target ≥ 500)`);
    line('  release lag (due → effect written)', `p50 ${lag.p50.toFixed(1)} s, p95 ${lag.p95.toFixed(1)} s, max ${lag.max.toFixed(1)} s`);
    line('  releases as a share of the raw claim rate', `${((HEADLINE / headlineSeconds / raw) * 100).toFixed(0)} %`);
    line('  sandbox sends during the release phase', `${headlineSent.toLocaleString('en')} (${Math.round(headlineSent / headlineSeconds)} sends/s)`);
    line(`per release, ${SAMPLE.toLocaleString('en')} enrollments in the table`, `${smallPerRelease.toFixed(3)} ms (${Math.round(SAMPLE / smallSeconds)} releases/s)`);
    line(`per release, ${tableSize.toLocaleString('en')} enrollments in the table`, `${largePerRelease.toFixed(3)} ms (${Math.round(SAMPLE / largeSeconds)} releases/s)`);
    line('  ratio large / small', `${(largePerRelease / smallPerRelease).toFixed(2)}× (target ≤ 1.3×)`);
    line('sends accepted by the sandbox, whole run', `${end.n.toLocaleString('en')} of ${released.toLocaleString('en')} released (${Math.round(end.n / Math.max(1, (end.last - end.first) / 1000))} sends/s first → last)`);
    line('  behind the sandbox at the end', `${messages.toLocaleString('en')} messaging messages; dispatcher ${queued.map((q) => `${q.status} ${q.n.toLocaleString('en')}`).join(', ') || 'none'}`);
    line('load average (1 min) during the run', `mean ${(loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length)).toFixed(1)}, max ${Math.max(...loads).toFixed(1)} (${os.cpus().length} cores)`);
    line('waited for the pipeline to drain between phases', `${drainSeconds.toFixed(0)} s`);
    line('setup', `${CONCURRENCY} release workers × up to ${BATCH} per transaction, DB pool ${POOL}, sender gap off; messaging + dispatcher + sandbox in own processes`);
  } finally {
    for (const child of children.reverse()) {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    }
    await world.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:release failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
