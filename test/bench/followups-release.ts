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
 * BENCH_PROF (a directory: each service process writes a `--cpu-prof` profile there).
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { followupFixture, insertEnrollments, line, makeDue, rawClaimRate, runBench, sandboxSends, type Service, sleep, startService, stopServices, waitCompleted, waitReady } from './harness.js';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const POOL = Number(process.env.BENCH_DB_POOL_SIZE ?? 20);
const BATCH = Number(process.env.BENCH_BATCH ?? 16);
const HEADLINE = Number(process.env.BENCH_HEADLINE ?? 100_000);
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const SAMPLE = Number(process.env.BENCH_SAMPLE ?? 10_000);

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

    // Setup through the services' own rules: a published, active flow, and a WhatsApp sender known to followups.
    const dispatcherEnv = { WHATSAPP_GRAPH_BASE_URL: sandboxUrl, OUTBOX_SWEEP_INTERVAL_MS: '0' };
    // The sandbox first (status webhooks off: no gateway here): the dispatcher proves the sender's number with it.
    children.push(startService('sandbox', { GATEWAY_URL: 'http://127.0.0.1:9' }, ports.sandbox));
    await waitReady(children[0], `${sandboxUrl}/health/live`);
    await fetch(`${sandboxUrl}/sandbox/meta/settings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status_webhooks: false }) });
    const fixture = await followupFixture(world, org, sandboxUrl);

    const raw = await rawClaimRate(world.databaseUrl, s, CONCURRENCY, 5);

    // Messaging, the dispatcher, and the ONE followups process under test.
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
    );
    children.push(followups);
    await Promise.all([waitReady(children[1], `http://127.0.0.1:${ports.messaging}/health/ready`), waitReady(children[2], `http://127.0.0.1:${ports.dispatcher}/health/ready`), waitReady(followups, `http://127.0.0.1:${ports.followups}/health/ready`)]);
    const loads: number[] = [];
    const loadTimer = setInterval(() => loads.push(os.loadavg()[0]), 5000);

    // Each timed phase starts with the send pipeline idle: until every earlier release has reached
    // the sandbox (at most 5 min), so no phase shares the machine with an earlier phase's backlog.
    let drainSeconds = 0;
    const drain = async (released: number) => {
      const started = Date.now();
      for (const stop = started + 300_000; (await sandboxSends(sandboxUrl)).n < released && Date.now() < stop;) await sleep(1000);
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
    await stopServices(children);
    await world.close();
  }
}

runBench('bench:release', main);
