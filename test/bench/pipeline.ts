/**
 * `npm run bench:pipeline`: the whole path of one follow-up send, every service its own compiled
 * process (as `npm start` runs them):
 *   followups releases the enrollment (effect row + `messaging.send` in its outbox) → messaging
 *   stores the message and enqueues it (`outbox.enqueue`) → the outbox-dispatcher drains it to the
 *   Meta sandbox → the sandbox answers with `sent`, `delivered` and `read` status webhooks, signed,
 *   to the gateway → the gateway hands them to the dispatcher (RPC) → messaging updates the message
 *   → followups updates the effect (`delivered_at`, `read_at`).
 * BENCH_SENDS enrollments, each a contact with a WhatsApp number of its own (a distinct pair, so
 * the dispatcher's 6.5 s per-pair pacing never holds a send back), become due at once. Printed:
 *   - end-to-end sends/s: BENCH_SENDS / (first release → the last effect's `read` applied);
 *   - releases/s of the same run (due → every enrollment completed), and release → wire
 *     (effect written → the sandbox accepted the send) p50/p99;
 *   - the raw one-row transaction rate of the same database (SKIP LOCKED claims, harness
 *     `rawClaimRate`), measured in the same run before the services start, as the reference;
 *   - per process, per send: SQL statements, transactions, AMQP messages published and delivered
 *     (counted in each process by `probe.mjs`, over the timed run only), and CPU seconds per 1,000
 *      sends (/proc/<pid>/stat before and after), the machine's PostgreSQL (and its backends' share by the service they serve) and RabbitMQ on rows of their own; idle background traffic is shown beside it; and the tables read by sequential scans, per send.
 * Targets (2-core reference machine, everything running): end-to-end sends/s ≥ 0.5 × releases/s
 * of the same run, and ≥ 3 × 82/s (the pipeline's rate when this benchmark was written).
 * Followups runs with per-number pacing and the in-flight window off (FOLLOWUP_SENDER_GAP_MS=0,
 * FOLLOWUP_SENDER_INFLIGHT_WINDOW=0) as in `bench:release`: all sends share one sending number,
 * and either would cap the run at one number's pace instead of the pipeline's.
 *
 * Env: BENCH_SENDS (default 3000), REPLICAS (1 or 2: processes of messaging and of the
 * outbox-dispatcher, default 1), BENCH_CONCURRENCY (release workers, 8), BENCH_BATCH (enrollments per
 * release transaction, 16), BENCH_DB_POOL_SIZE (per process, 8; followups gets at least
 * BENCH_CONCURRENCY + 4), BENCH_STATUS_DELAY_MS (the sandbox's delay before each status, 50),
 * BENCH_INFLIGHT_WINDOW (followups' FOLLOWUP_SENDER_INFLIGHT_WINDOW, default 0: off; the
 * service's default, 100, holds the release loop to the pipeline's pace instead of measuring it),
 * BENCH_SEQ_SCANS (tables listed with their sequential scans per send, 8), BENCH_STATEMENTS (N: print each process's N most frequent statements per send; the probe then
 * keeps a count per statement text), BENCH_DRAIN_SECONDS (how long to wait for the last `read`, 300), BENCH_STALL_SECONDS (the run ends
 * when no new `read` came for this long, 30), BENCH_PROF (a directory: each
 * service writes a `--cpu-prof` profile there).
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import {
  cpuSeconds,
  followupFixture,
  postgresCpuByBackend,
  postgresCpuDelta,
  postgresCpuSeconds,
  insertEnrollments,
  line,
  makeDue,
  pct,
  type ProbeReading,
  rabbitmqCpuSeconds,
  rawClaimRate,
  readProbe,
  receivedCalls,
  type Service,
  seqScanDelta,
  sleep,
  startService,
  stopServices,
  tableScans,
  waitCompleted,
  runBench,
  waitReady,
} from './harness.js';

const SENDS = Number(process.env.BENCH_SENDS ?? 3000);
const REPLICAS = Number(process.env.REPLICAS ?? 1);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const BATCH = Number(process.env.BENCH_BATCH ?? 16);
const POOL = Number(process.env.BENCH_DB_POOL_SIZE ?? 8);
const STATUS_DELAY_MS = Number(process.env.BENCH_STATUS_DELAY_MS ?? 50);
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 300);
// The probe in each service process reads it from the environment the harness passes on.
if (Number(process.env.BENCH_STATEMENTS ?? 0) > 0) process.env.BENCH_PROBE_STATEMENTS = '1';
const WARMUP = Math.min(300, Math.max(50, Math.round(SENDS / 10)));
const SECRET = 'sandbox-meta-app-secret';
/** The pipeline's end-to-end rate when this benchmark was written (bench:release's sandbox count, first → last). */
const BASELINE_SENDS_PER_S = 82;
const IDLE_SECONDS = 3;
/** Tables listed under "sequential scans per send" (BENCH_SEQ_SCANS, default 8; 0: none). */
const SEQ_SCAN_TABLES = Number(process.env.BENCH_SEQ_SCANS ?? 8);
/** A run with no new `read` for this long is over (some sends never got there). */
const STALL_SECONDS = Number(process.env.BENCH_STALL_SECONDS ?? 30);

/** Rows each service's transactional outbox took since `since`, by type, most first. */
async function eventsByType(world: TestWorld, since: Date): Promise<Array<{ service: string; type: string; n: number }>> {
  const schemas = await world.sql<{ schema: string }>(`SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'outbox_events' AND table_schema LIKE $1`, [`${world.namespace}%`]);
  const rows: Array<{ service: string; type: string; n: number }> = [];
  for (const { schema } of schemas)
    for (const r of await world.sql<{ type: string; n: number }>(`SELECT type, count(*)::int AS n FROM "${schema}".outbox_events WHERE created_at >= $1 GROUP BY type`, [since])) rows.push({ service: schema.slice(world.namespace.length).replace(/^_/, ''), ...r });
  return rows.sort((a, b) => b.n - a.n);
}

/** Effects of `tag`'s enrollments that have their `read` applied. */
async function readCount(world: TestWorld, tag: string): Promise<number> {
  const s = world.schema('followups');
  const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}".effects f JOIN "${s}".enrollments e ON e.id = f.enrollment_id WHERE e.operation_key LIKE $1 AND f.kind = 'send' AND f.read_at IS NOT NULL`, [`${tag}-%`]);
  return n;
}

/**
 * Waits until `total` sends of `tag` have their `read` applied, or `deadline` (epoch ms), or no
 * new one for STALL_SECONDS; answers the count and the wall-clock ms the last of them was seen.
 */
async function waitRead(world: TestWorld, tag: string, total: number, deadline: number): Promise<{ at: number; n: number }> {
  let last = { at: Date.now(), n: -1 };
  for (;;) {
    const n = await readCount(world, tag);
    if (n !== last.n) last = { at: Date.now(), n };
    if (n >= total || Date.now() > deadline || Date.now() - last.at > STALL_SECONDS * 1000) return last;
    await sleep(200);
  }
}

/** Where the sends of `tag` are: effects by status and delivery stamp, messages, wire accepts. */
async function stages(world: TestWorld, tag: string): Promise<string> {
  const s = world.schema('followups');
  const [r] = await world.sql<{ effects: number; sent: number; delivered: number; read: number }>(
    `SELECT count(*)::int AS effects, count(*) FILTER (WHERE f.status = 'sent')::int AS sent, count(f.delivered_at)::int AS delivered, count(f.read_at)::int AS read
       FROM "${s}".effects f JOIN "${s}".enrollments e ON e.id = f.enrollment_id WHERE e.operation_key LIKE $1 AND f.kind = 'send'`,
    [`${tag}-%`],
  );
  const m = world.schema('messaging');
  const messages = await world.sql<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM "${m}".messages WHERE requester = 'followups' GROUP BY status ORDER BY status`);
  const [{ n: pending }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${m}".pending_statuses`);
  return `effects ${r.effects}: sent ${r.sent}, delivered ${r.delivered}, read ${r.read}; messaging messages ${messages.map((x) => `${x.status} ${x.n}`).join(', ')}; pending statuses ${pending} (all runs so far)`;
}

/**
 * Where a send's time goes, hop by hop, ms (p50/p99 over `tag`'s sends): effect written → message
 * stored by messaging → outbox entry created by the dispatcher → first attempt started → accepted at
 * the sandbox; and the whole of it, release → wire. A hop whose p50 grows with the run is where the
 * queue builds. Sends are told apart by their contact's number (one per send).
 */
async function sendTimes(world: TestWorld, tag: string, sandboxUrl: string, sinceSeq: number): Promise<{ releaseToWire: number[]; hops: Array<[string, number[]]> }> {
  const f = world.schema('followups');
  const m = world.schema('messaging');
  const o = world.schema('outbox-dispatcher');
  const digits = (text: string) => text.replace(/\D/g, '');
  const byPhone = async (sql: string, params: unknown[] = []) => new Map((await world.sql<{ phone: string; at: number }>(sql, params)).map((r) => [digits(r.phone), Number(r.at)]));
  const released = await byPhone(
    `SELECT mc.phone, extract(epoch FROM fe.created_at) * 1000 AS at FROM "${f}".effects fe JOIN "${f}".enrollments e ON e.id = fe.enrollment_id
       JOIN "${m}".contacts mc ON mc.id::text = e.contact_id::text WHERE e.operation_key LIKE $1 AND fe.kind = 'send'`,
    [`${tag}-%`],
  );
  const stored = await byPhone(`SELECT mc.phone, extract(epoch FROM min(mm.created_at)) * 1000 AS at FROM "${m}".messages mm JOIN "${m}".contacts mc ON mc.id = mm.contact_id WHERE mm.direction = 'outbound' GROUP BY mc.phone`);
  const enqueued = await byPhone(`SELECT recipient AS phone, extract(epoch FROM min(created_at)) * 1000 AS at FROM "${o}".message_outbox GROUP BY recipient`);
  const claimed = await byPhone(`SELECT ob.recipient AS phone, extract(epoch FROM min(a.started_at)) * 1000 AS at FROM "${o}".message_outbox ob JOIN "${o}".message_outbox_attempts a ON a.entry_id = ob.id GROUP BY ob.recipient`);
  const wire = new Map<string, number>();
  for (const c of await receivedCalls(sandboxUrl, sinceSeq)) if (c.operation === 'messages' && c.outcome === 'accepted' && !wire.has(digits(c.context.wa_id))) wire.set(digits(c.context.wa_id), c.at);
  const out: Array<[string, number[]]> = [
    ['effect → message stored', []],
    ['stored → outbox entry', []],
    ['entry → attempt started', []],
    ['attempt → sandbox accepted', []],
  ];
  const releaseToWire: number[] = [];
  for (const [phone, at] of released) {
    const t = [at, stored.get(phone) ?? NaN, enqueued.get(phone) ?? NaN, claimed.get(phone) ?? NaN, wire.get(phone) ?? NaN];
    // Whole ms: a message of a consumer batch is stored at the batch's instant plus its place in µs.
    for (let i = 0; i < 4; i++) if (Number.isFinite(t[i]) && Number.isFinite(t[i + 1])) out[i][1].push(Math.round(t[i + 1] - t[i]));
    if (Number.isFinite(t[4])) releaseToWire.push(t[4] - at);
  }
  for (const v of [releaseToWire, ...out.map(([, ms]) => ms)]) v.sort((a, b) => a - b);
  return { releaseToWire, hops: out };
}

/** The sandbox's status and inbound webhook deliveries after `sinceSeq` (its control API): the last answer's status and the tries of each. */
async function webhookDeliveries(sandboxUrl: string, sinceSeq = 0): Promise<{ seq: number; status: number; tries: number }[]> {
  const { deliveries } = (await (await fetch(`${sandboxUrl}/sandbox/meta/webhooks?since_seq=${sinceSeq}`)).json()) as { deliveries: { seq: number; status: number; tries: number }[] };
  return deliveries;
}

type Snapshot = Map<Service, ProbeReading & { cpu: number }>;

async function snapshot(children: Service[], probeDir: string): Promise<Snapshot> {
  const out: Snapshot = new Map();
  await Promise.all(children.map(async (c) => out.set(c, { ...(await readProbe(c, probeDir)), cpu: cpuSeconds(c.pid!) })));
  return out;
}

const mark = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

async function main(): Promise<void> {
  // The services run compiled, as `npm start` and the image run them (no TypeScript loader).
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'ignore' });
  const world = await createTestWorld('bench_pipeline');
  const probeDir = mkdtempSync(path.join(os.tmpdir(), 'bench-pipeline-'));
  const children: Service[] = [];
  try {
    const s = world.schema('followups');
    const base = 21_000 + Math.floor(Math.random() * 20_000);
    let nextPort = base;
    const sandboxPort = nextPort++;
    const gatewayPort = nextPort++;
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const env = { ...world.env, BUS_PREFETCH: '200', DB_POOL_SIZE: String(POOL), META_APP_SECRET: SECRET };
    const sandbox = startService('sandbox', { GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`, META_APP_SECRET: SECRET }, sandboxPort, { probeDir });
    children.push(sandbox);
    await waitReady(sandbox, `${sandboxUrl}/health/live`);
    const settings = await fetch(`${sandboxUrl}/sandbox/meta/settings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status_webhooks: true, statuses: ['sent', 'delivered', 'read'], status_delay_ms: STATUS_DELAY_MS }),
    });
    if (!settings.ok) throw new Error(`sandbox settings refused: ${settings.status} ${await settings.text()}`);
    // The dispatcher proves the sender's number with Meta (the sandbox) when it is registered.
    const fixture = await followupFixture(world, randomUUID(), sandboxUrl);
    const raw = await rawClaimRate(world.databaseUrl, s, CONCURRENCY, 5);

    const ready: Promise<void>[] = [];
    const start = (svc: string, extra: Record<string, string>, name = svc, port = nextPort++) => {
      const child = startService(svc, { ...env, ...extra }, port, { probeDir, name });
      children.push(child);
      ready.push(waitReady(child, `http://127.0.0.1:${port}/health/ready`));
    };
    start('gateway', {}, 'gateway', gatewayPort);
    for (let i = 1; i <= REPLICAS; i++) start('messaging', {}, `messaging-${i}`);
    for (let i = 1; i <= REPLICAS; i++) {
      start('outbox-dispatcher', { WHATSAPP_GRAPH_BASE_URL: sandboxUrl, OUTBOX_SWEEP_INTERVAL_MS: '0', OUTBOX_DISPATCH_CONCURRENCY: '64', OUTBOX_INSTANCE_ID: `bench-dispatcher-${i}` }, `dispatcher-${i}`);
    }
    start('followups', {
      DB_POOL_SIZE: String(Math.max(POOL, CONCURRENCY + 4)),
      FOLLOWUP_RELEASE_ENABLED: 'true',
      FOLLOWUP_RELEASE_CONCURRENCY: String(CONCURRENCY),
      FOLLOWUP_RELEASE_BATCH: String(BATCH),
      FOLLOWUP_SENDER_GAP_MS: '0',
      FOLLOWUP_SENDER_INFLIGHT_WINDOW: process.env.BENCH_INFLIGHT_WINDOW ?? '0',
      FOLLOWUP_POLL_MS: '200',
    });
    await Promise.all(ready);

    // Warm-up (JIT, pools, plan caches, every queue declared), through to the last `read`.
    await insertEnrollments(world, fixture, WARMUP, `now() + interval '30 days'`, 'warmup', true);
    await makeDue(world, 'warmup');
    const warm = await waitRead(world, 'warmup', WARMUP, Date.now() + 120_000);
    const warmNote = warm.n < WARMUP ? `${warm.n}/${WARMUP} warm-up sends reached 'read' (${await stages(world, 'warmup')})` : '';
    if (warm.n === 0) {
      const { deliveries } = (await (await fetch(`${sandboxUrl}/sandbox/meta/webhooks`)).json()) as { deliveries: { status: number; response: string }[] };
      const answers = [...new Set(deliveries.map((d) => `${d.status} ${d.response.slice(0, 200)}`))].slice(0, 3).join(' | ');
      throw new Error(`warm-up: only ${warm.n} of ${WARMUP} sends reached 'read' (${await stages(world, 'warmup')}; ${deliveries.length} status webhooks, answers: ${answers})`);
    }

    await insertEnrollments(world, fixture, SENDS, `now() + interval '30 days'`, 'run', true);
    await sleep(1000);
    // Idle background (polls, sweeps, relays) over a few seconds, for judging the per-send counts.
    const idleFrom = await snapshot(children, probeDir);
    await sleep(IDLE_SECONDS * 1000);
    const idleTo = await snapshot(children, probeDir);
    const wireSeq = (await receivedCalls(sandboxUrl)).at(-1)?.seq ?? 0;
    const webhookSeq = (await webhookDeliveries(sandboxUrl)).at(-1)?.seq ?? 0;

    const before = await snapshot(children, probeDir);
    const scansBefore = await tableScans(world, world.namespace);
    const pgBefore = postgresCpuSeconds();
    const backendsBefore = await postgresCpuByBackend(world, world.namespace);
    const mqBefore = rabbitmqCpuSeconds();
    const runStartedAt = new Date();
    const due = await makeDue(world, 'run');
    const releaseSeconds = await waitCompleted(world, 'run', SENDS, due);
    const done = await waitRead(world, 'run', SENDS, Date.now() + DRAIN_SECONDS * 1000);
    const after = await snapshot(children, probeDir);
    const pgCpu = postgresCpuSeconds() - pgBefore;
    const pgByService = postgresCpuDelta(backendsBefore, await postgresCpuByBackend(world, world.namespace));
    const mqCpu = rabbitmqCpuSeconds() - mqBefore;
    // PostgreSQL flushes its scan counters within a second of a transaction's end.
    await sleep(1500);
    const seqScans = seqScanDelta(scansBefore, await tableScans(world, world.namespace), SEQ_SCAN_TABLES);
    const eventTypes = await eventsByType(world, runStartedAt);

    const [{ first }] = await world.sql<{ first: Date }>(`SELECT min(f.created_at) AS first FROM "${s}".effects f JOIN "${s}".enrollments e ON e.id = f.enrollment_id WHERE e.operation_key LIKE 'run-%' AND f.kind = 'send'`);
    const e2eSeconds = (done.at - first.getTime()) / 1000;
    const e2e = done.n / e2eSeconds;
    const releases = SENDS / releaseSeconds;
    const { releaseToWire: wire, hops } = await sendTimes(world, 'run', sandboxUrl, wireSeq);

    process.stdout.write(`bench:pipeline — ${SENDS} follow-up sends, distinct pairs; messaging ×${REPLICAS}, outbox-dispatcher ×${REPLICAS}; ${CONCURRENCY} release workers × ${BATCH}\n`);
    line('raw one-row transactions (SKIP LOCKED, same DB)', `${Math.round(raw)} tx/s (${CONCURRENCY} connections, reference)`);
    line('releases (due → all completed)', `${Math.round(releases)} releases/s (${releaseSeconds.toFixed(1)} s)`);
    line('release → wire', `p50 ${pct(wire, 50)} ms, p99 ${pct(wire, 99)} ms (${wire.length} sends matched)`);
    line('end-to-end (first release → last effect read)', `${e2e.toFixed(0)} sends/s (${done.n}/${SENDS} read, ${e2eSeconds.toFixed(1)} s)`);
    line('  target ≥ 0.5 × releases/s', `${(e2e / releases).toFixed(2)}× ${mark(e2e >= 0.5 * releases && done.n === SENDS)}`);
    line(`  target ≥ 3 × ${BASELINE_SENDS_PER_S}/s`, `${(e2e / BASELINE_SENDS_PER_S).toFixed(2)}× ${mark(e2e >= 3 * BASELINE_SENDS_PER_S && done.n === SENDS)}`);
    for (const [hop, ms] of hops) line(`  ${hop}`, `p50 ${pct(ms, 50)} ms, p99 ${pct(ms, 99)} ms`);
    if (done.n < SENDS) line('  not all read: where they are', await stages(world, 'run'));
    // A status webhook the gateway did not acknowledge (503: an owner did not confirm in time) is sent again, as Meta does.
    const webhooks = await webhookDeliveries(sandboxUrl, webhookSeq);
    const answers = new Map<number, number>();
    for (const d of webhooks) answers.set(d.status, (answers.get(d.status) ?? 0) + 1);
    const tries = webhooks.reduce((n, d) => n + d.tries, 0);
    line(
      'status webhooks (last answer: count)',
      `${webhooks.length}, ${(tries / Math.max(1, webhooks.length)).toFixed(2)} tries each; ${[...answers]
        .sort((a, b) => a[0] - b[0])
        .map(([status, n]) => `${status}: ${n}`)
        .join(', ')}`,
    );
    if (warmNote) line('  warm-up', warmNote);

    // Per-send cost, per process (counted over the timed run; idle background per second beside it).
    const cols = ['process', 'SQL/send', 'tx/send', 'trips/send', 'AMQP out/send', 'AMQP in/send', 'CPU s/1k sends', 'idle SQL/s'];
    const widths = [14, 9, 8, 11, 14, 13, 15, 10];
    const row = (cells: string[]) => process.stdout.write(cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' ') + '\n');
    row(cols);
    const total = { statements: 0, transactions: 0, roundTrips: 0, published: 0, delivered: 0, cpu: 0, idle: 0 };
    for (const c of children) {
      const a = after.get(c)!;
      const b = before.get(c)!;
      const d = { statements: a.statements - b.statements, transactions: a.transactions - b.transactions, roundTrips: a.roundTrips - b.roundTrips, published: a.published - b.published, delivered: a.delivered - b.delivered, cpu: a.cpu - b.cpu };
      const idle = (idleTo.get(c)!.statements - idleFrom.get(c)!.statements) / IDLE_SECONDS;
      for (const k of ['statements', 'transactions', 'roundTrips', 'published', 'delivered', 'cpu'] as const) total[k] += d[k];
      total.idle += idle;
      row([c.name, (d.statements / SENDS).toFixed(2), (d.transactions / SENDS).toFixed(2), (d.roundTrips / SENDS).toFixed(2), (d.published / SENDS).toFixed(2), (d.delivered / SENDS).toFixed(2), ((d.cpu * 1000) / SENDS).toFixed(1), idle.toFixed(1)]);
    }
    // BENCH_STATEMENTS=N: each process's N most frequent statements of the timed run, per send.
    const top = Number(process.env.BENCH_STATEMENTS ?? 0);
    if (top > 0)
      for (const c of children) {
        const a = after.get(c)!.byStatement ?? {};
        const b = before.get(c)!.byStatement ?? {};
        const rows = Object.entries(a)
          .map(([text, n]) => [text, n - (b[text] ?? 0)] as const)
          .filter(([, n]) => n > 0)
          .sort((x, y) => y[1] - x[1])
          .slice(0, top);
        process.stdout.write(`  ${c.name}:\n${rows.map(([text, n]) => `    ${(n / SENDS).toFixed(2).padStart(6)}  ${text}`).join('\n')}\n`);
      }
    // The database server's share: every backend of the machine (the shared server; other clients add to it).
    total.cpu += pgCpu;
    row(['postgres', '', '', '', '', '', ((pgCpu * 1000) / SENDS).toFixed(1), '']);
    // The server's share by the service whose connection it served (application_name).
    for (const [service, cpu] of [...pgByService].sort((a, b) => b[1] - a[1])) row([`pg ${service}`, '', '', '', '', '', ((cpu * 1000) / SENDS).toFixed(1), '']);
    // The broker is shared too, and on the same two cores.
    total.cpu += mqCpu;
    row(['rabbitmq', '', '', '', '', '', ((mqCpu * 1000) / SENDS).toFixed(1), '']);
    // Folded around generic-plan statements (libs/database genericPlan): a few µs each on the server, in no extra round trip.
    const planSettings = children.reduce((n, c) => n + (after.get(c)!.settings ?? 0) - (before.get(c)!.settings ?? 0), 0);
    row(['total', (total.statements / SENDS).toFixed(2), (total.transactions / SENDS).toFixed(2), (total.roundTrips / SENDS).toFixed(2), (total.published / SENDS).toFixed(2), (total.delivered / SENDS).toFixed(2), ((total.cpu * 1000) / SENDS).toFixed(1), total.idle.toFixed(1)]);
    process.stdout.write(`  plus ${(planSettings / SENDS).toFixed(2)} plan settings statements per send (set_config around generic-plan statements, in their round trips)\n`);
    // Sequential scans over the timed run (the harness's own progress reads included): a hot
    // statement that is not on an index shows here as rows read per send.
    if (seqScans.length > 0) {
      process.stdout.write(`sequential scans per send (table: scans, rows read; index scans beside)\n`);
      for (const [table, scans, rows, indexScans] of seqScans) process.stdout.write(`  ${table.padEnd(44)} ${(scans / SENDS).toFixed(2).padStart(7)} ${(rows / SENDS).toFixed(1).padStart(9)}   idx ${(indexScans / SENDS).toFixed(2)}\n`);
    }
    // BENCH_EVENTS=N: the N event and command types each service's outbox published most per send.
    const topEvents = Number(process.env.BENCH_EVENTS ?? 0);
    if (topEvents > 0) {
      process.stdout.write(`outbox events per send (service: type)\n`);
      for (const { service, type, n } of eventTypes.slice(0, topEvents)) process.stdout.write(`  ${(n / SENDS).toFixed(2).padStart(6)}  ${service}: ${type}\n`);
    }
    const [load1] = os.loadavg();
    line('load average (1 min) at the end', `${load1.toFixed(1)} (${os.cpus().length} cores)`);
  } finally {
    await stopServices(children);
    await world.close();
    rmSync(probeDir, { recursive: true, force: true });
  }
}

runBench('bench:pipeline', main);
