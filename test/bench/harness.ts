/**
 * Set-up shared by the benchmarks that run services as their own compiled processes
 * (`bench:release`, `bench:inbound`, `bench:pipeline`, `bench:gateway`): starting and stopping a
 * service from `dist/`, the sandbox's wire log, the raw one-row transaction rate of the database,
 * the follow-up fixture (a published flow and a connected WhatsApp sender) and its enrollments,
 * per-process CPU time, and the per-process SQL/AMQP counters of `probe.mjs`.
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase } from '@touchpoint/database';
import { TEST_DATABASE_URL, type TestWorld, vacuumCatalogs } from '@touchpoint/testing';
import { FollowupsConfig } from '../../apps/followups/src/followups.config.js';
import { FollowupsModule } from '../../apps/followups/src/followups.module.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { SendersService } from '../../apps/outbox-dispatcher/src/senders/senders.service.js';

/** The sandbox's WhatsApp phone number id (fixtures/meta). */
export const PHONE_NUMBER_ID = '100000000000002';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The `p`th percentile of an ascending list (NaN when empty). */
export const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);
/** Prints one report line: the label padded to `width`, then the value. */
export const line = (label: string, value: string, width = 52) => process.stdout.write(`${label.padEnd(width)} ${value}\n`);

/** Runs a benchmark's `main` and exits: 0 when it resolved, 1 with the error on stderr when not. */
export function runBench(name: string, main: () => Promise<void>): void {
  vacuumTestCatalogs()
    .then(main)
    .then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`${name} failed: ${(err as Error).stack ?? err}\n`);
        process.exit(1);
      },
    );
}

/** Before a benchmark: the catalogs earlier runs churned, vacuumed, so a run does not pay for the runs before it (`vacuumCatalogs`). */
async function vacuumTestCatalogs(): Promise<void> {
  await ensureDatabase(TEST_DATABASE_URL);
  const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
  try {
    await vacuumCatalogs(pool);
  } finally {
    await pool.end();
  }
}

/** A service's child process, with the last 2,000 characters of its stderr. */
export type Service = ChildProcess & { tail: () => string; name: string };

/** The preload that counts SQL statements, transactions and AMQP messages of a process. */
const PROBE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'probe.mjs');

/**
 * Starts `dist/apps/<svc>/src/main.js` (the compiled build, as `npm start` runs it) on `port`, or
 * `options.script` instead. With `options.probeDir`, the process loads `probe.mjs` and writes its
 * counters to `<probeDir>/<pid>.json` on SIGWINCH (see `readProbe`). BENCH_PROF (a directory) adds
 * `--cpu-prof` there. BENCH_LOG_DIR (a directory) keeps each process's log there, `<name>.log`, at
 * LOG_LEVEL info (else warn, and dropped).
 */
export function startService(svc: string, env: Record<string, string>, port: number, options: { probeDir?: string; script?: string; name?: string } = {}): Service {
  const args = [...(process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : []), ...(options.probeDir ? ['--import', PROBE] : []), options.script ?? `dist/apps/${svc}/src/main.js`];
  const logDir = process.env.BENCH_LOG_DIR;
  const log = logDir ? openSync(path.join(logDir, `${options.name ?? svc}.log`), 'a') : 'ignore';
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: logDir ? 'info' : 'warn', ...(options.probeDir ? { BENCH_PROBE_DIR: options.probeDir } : {}) },
    stdio: ['ignore', log, 'pipe'],
  }) as Service;
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
  child.tail = () => stderr;
  child.name = options.name ?? svc;
  return child;
}

/** Waits until `url` answers 2xx (at most 90 s); throws with the service's stderr if it exits first. */
export async function waitReady(child: Service, url: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (
      await fetch(url)
        .then((r) => r.ok)
        .catch(() => false)
    )
      return;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${child.name} did not become ready: ${child.tail()}`);
    await sleep(200);
  }
}

/** SIGTERMs the services, newest first, and waits for each to exit. */
export async function stopServices(children: Service[]): Promise<void> {
  for (const child of [...children].reverse()) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([new Promise((r) => child.once('exit', r)), sleep(10_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }
}

/** One call the Meta sandbox received (its control API's `received` list). */
export type WireCall = { seq: number; at: number; operation: string; outcome: string; context: Record<string, string>; body?: Record<string, unknown> };

/** Every call the Meta sandbox received after `sinceSeq`, oldest first. */
export async function receivedCalls(sandboxUrl: string, sinceSeq = 0): Promise<WireCall[]> {
  const out: WireCall[] = [];
  let since = sinceSeq;
  for (;;) {
    const { calls } = (await (await fetch(`${sandboxUrl}/sandbox/control/meta/received?since_seq=${since}&limit=5000`)).json()) as { calls: WireCall[] };
    if (!calls.length) return out;
    out.push(...calls);
    since = calls[calls.length - 1].seq;
  }
}

/** WhatsApp `messages` calls the sandbox accepted: count, and first/last arrival (epoch ms). */
export async function sandboxSends(sandboxUrl: string): Promise<{ n: number; first: number; last: number }> {
  let n = 0;
  let first = 0;
  let last = 0;
  for (const c of await receivedCalls(sandboxUrl)) {
    if (c.operation !== 'messages' || c.outcome !== 'accepted') continue;
    n++;
    first ||= c.at;
    last = c.at;
  }
  return { n, first, last };
}

/**
 * The raw one-row transaction rate of the database: one-row `UPDATE … WHERE id = (SELECT … FOR
 * UPDATE SKIP LOCKED)` claims, each its own transaction, from `connections` clients for `seconds`
 * on a scratch table in `schema` (dropped after). The ceiling of any claim loop; claims/s.
 */
export async function rawClaimRate(url: string, schema: string, connections: number, seconds: number): Promise<number> {
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
        const r = await c.query(`UPDATE "${schema}".bench_claims SET done = true WHERE id = (SELECT id FROM "${schema}".bench_claims WHERE NOT done AND due <= now() ORDER BY due LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id`);
        claims += r.rowCount ?? 0;
      }
      await c.end();
    }),
  );
  await admin.query(`DROP TABLE "${schema}".bench_claims`);
  await admin.end();
  return claims / seconds;
}

/** A published, active follow-up flow (trigger → text → end) of `org`, and the dispatcher's WhatsApp sender. */
export interface FollowupFixture {
  org: string;
  flowId: string;
  versionId: string;
  senderId: string;
}

/**
 * Sets up `org` through the services' own rules, in-process (closed again before returning): a
 * published, active flow (trigger → text → end, any hour), and a WhatsApp sender registered in the
 * dispatcher (Graph base URL = `sandboxUrl`, phone number PHONE_NUMBER_ID, first added to the
 * sandbox running there), known to followups.
 * Runs the migrations of followups and the dispatcher.
 */
export async function followupFixture(world: TestWorld, org: string, sandboxUrl: string): Promise<FollowupFixture> {
  const setup = await world.start(FollowupsModule.forRoot(world.config(FollowupsConfig, { FOLLOWUP_RELEASE_ENABLED: 'false' })));
  const dispatcherSetup = await world.start(OutboxDispatcherModule.forRoot(world.config(OutboxDispatcherConfig, { WHATSAPP_GRAPH_BASE_URL: sandboxUrl, OUTBOX_SWEEP_INTERVAL_MS: '0', OUTBOX_DRAIN_AUTOSTART: 'false' })));
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
  // The dispatcher proves the number with Meta: the sandbox must know it, readable with this token.
  const number = await fetch(`${sandboxUrl}/sandbox/meta/numbers`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ phone_number_id: PHONE_NUMBER_ID, access_token: 'bench-token', display_phone_number: '5511912345678' }),
  });
  if (!number.ok) throw new Error(`the sandbox refused the bench number: ${number.status} ${await number.text()}`);
  const sender = await dispatcherSetup.get(SendersService).create({
    organization_id: org,
    channel: 'whatsapp',
    phone_number_id: PHONE_NUMBER_ID,
    display_phone_number: '5511912345678',
    business_account_id: '100000000000001',
    access_token: 'bench-token',
  });
  // The sender.connected event would tell followups too; the row is written here so the run does not wait on it.
  await world.sql(`INSERT INTO "${world.schema('followups')}".senders (sender_id, organization_id, channel, status, is_default) VALUES ($1, $2, 'whatsapp', 'connected', true) ON CONFLICT DO NOTHING`, [sender.id, org]);
  // Only the processes under test run from here on (followups' relay is the one that publishes).
  await dispatcherSetup.close();
  await setup.close();
  return { org, flowId: flow.id, versionId: published.published_version_id!, senderId: sender.id };
}

let numbersUsed = 0;

/**
 * Inserts `count` contacts (who wrote a minute ago) and their enrollments at the send node, due at
 * `due` (SQL), operation keys `<tag>-<contact id>`. With `reachable`, each contact also gets a
 * messaging contact (same id) with its own WhatsApp number (5511 9 + 8 digits, distinct over the
 * process), so its release becomes a real send to a pair of its own; waiting filler rows need none.
 */
export async function insertEnrollments(world: TestWorld, f: Pick<FollowupFixture, 'org' | 'flowId' | 'versionId'>, count: number, due: string, tag: string, reachable = false): Promise<void> {
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

/** Makes the waiting enrollments of `tag` due now; answers the instant (epoch ms) they became due. */
export async function makeDue(world: TestWorld, tag: string): Promise<number> {
  const s = world.schema('followups');
  const [row] = await world.sql<{ at: Date }>(`UPDATE "${s}".enrollments SET next_run_at = clock_timestamp() WHERE operation_key LIKE $1 AND status = 'active' RETURNING clock_timestamp() AS at`, [`${tag}-%`]);
  return row.at.getTime();
}

/** Waits until `total` enrollments of `tag` are completed; answers the elapsed seconds since `since` (epoch ms). */
export async function waitCompleted(world: TestWorld, tag: string, total: number, since: number): Promise<number> {
  const s = world.schema('followups');
  for (;;) {
    const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}".enrollments WHERE operation_key LIKE $1 AND status = 'completed'`, [`${tag}-%`]);
    if (n >= total) return (Date.now() - since) / 1000;
    await sleep(250);
  }
}

/** User + system CPU time a process has used so far, seconds (from /proc/<pid>/stat; NaN once it is gone). */
/**
 * CPU seconds every PostgreSQL server process of this machine has used so far (user + system, from
 * /proc; backends that ended are not counted, so take it over a run whose connections stay open).
 */
export function postgresCpuSeconds(): number {
  return commandCpuSeconds('postgres');
}

/**
 * CPU seconds of the machine's RabbitMQ (its Erlang VM, `beam.smp`), the broker every service
 * shares: the per-send cost tables count it beside PostgreSQL.
 */
export function rabbitmqCpuSeconds(): number {
  return commandCpuSeconds('beam.smp');
}

/**
 * CPU seconds of each PostgreSQL backend serving a service of this world, by the schema in its
 * `application_name` (`touchpoint:<schema>`, libs/database): which service's statements the server
 * spends its time on. Keyed by backend pid; `service` is the schema less the world's prefix.
 */
export async function postgresCpuByBackend(world: { sql: TestWorld['sql'] }, prefix: string): Promise<Map<number, { service: string; cpu: number }>> {
  const rows = await world.sql<{ pid: number; application_name: string }>(`SELECT pid, application_name FROM pg_stat_activity WHERE application_name LIKE $1`, [`touchpoint:${prefix}\\_%`]);
  return new Map(rows.map((r) => [r.pid, { service: r.application_name.slice(`touchpoint:${prefix}_`.length), cpu: cpuSeconds(r.pid) }]));
}

/**
 * PostgreSQL CPU seconds by service between two `postgresCpuByBackend` readings (a backend opened
 * between them counts from zero; one closed between them is missing).
 */
export function postgresCpuDelta(before: Map<number, { service: string; cpu: number }>, after: Map<number, { service: string; cpu: number }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [pid, a] of after) {
    if (!Number.isFinite(a.cpu)) continue;
    const from = before.get(pid)?.cpu ?? 0;
    out.set(a.service, (out.get(a.service) ?? 0) + a.cpu - (Number.isFinite(from) ? from : 0));
  }
  return out;
}

/** CPU seconds of the live processes whose command name starts with `prefix` (/proc/<pid>/comm). */
function commandCpuSeconds(prefix: string): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith(prefix)) continue;
    } catch {
      continue;
    }
    const s = cpuSeconds(Number(pid));
    if (Number.isFinite(s)) total += s;
  }
  return total;
}

/** Cumulative scan counters of one table (pg_stat_user_tables). */
export interface TableScans {
  seqScans: number;
  seqRows: number;
  indexScans: number;
}

/**
 * Scan counters of every table in the schemas starting with `prefix` (a test world's namespace),
 * keyed `schema-suffix.table`. PostgreSQL flushes a backend's counters at most once a second, so a
 * reading taken right after a run may miss its last second.
 */
export async function tableScans(world: { sql: TestWorld['sql'] }, prefix: string): Promise<Map<string, TableScans>> {
  const rows = await world.sql<{ schemaname: string; relname: string; seq_scan: string; seq_tup_read: string; idx_scan: string | null }>(`SELECT schemaname, relname, seq_scan, seq_tup_read, idx_scan FROM pg_stat_user_tables WHERE schemaname LIKE $1`, [`${prefix}\\_%`]);
  return new Map(rows.map((r) => [`${r.schemaname.slice(prefix.length + 1)}.${r.relname}`, { seqScans: Number(r.seq_scan), seqRows: Number(r.seq_tup_read), indexScans: Number(r.idx_scan ?? 0) }]));
}

/**
 * The tables read by sequential scans between two `tableScans` readings, most rows read first: the
 * statements that are not on an index. Rows of [table, seq scans, rows read, index scans].
 */
export function seqScanDelta(before: Map<string, TableScans>, after: Map<string, TableScans>, top: number): Array<[string, number, number, number]> {
  return [...after]
    .map(([table, a]): [string, number, number, number] => {
      const b = before.get(table) ?? { seqScans: 0, seqRows: 0, indexScans: 0 };
      return [table, a.seqScans - b.seqScans, a.seqRows - b.seqRows, a.indexScans - b.indexScans];
    })
    .filter(([, scans]) => scans > 0)
    .sort((x, y) => y[2] - x[2] || y[1] - x[1])
    .slice(0, top);
}

export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) — utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
/** Linux's USER_HZ, the unit of /proc/<pid>/stat times (100 on every mainstream kernel). */
const CLOCK_TICKS = 100;

/** What `probe.mjs` counted in one process since it started. */
export interface ProbeCounts {
  /** SQL statements sent (query calls), BEGIN/COMMIT/ROLLBACK not included. */
  statements: number;
  /** Plan settings statements folded around generic-plan steps (libs/database `genericPlan`), not in `statements`. */
  settings: number;
  /** Transactions: COMMITs and ROLLBACKs of explicit ones, plus each statement run outside one. */
  transactions: number;
  /** Every query call, BEGIN/COMMIT/ROLLBACK included. */
  roundTrips: number;
  /** AMQP messages published (events, commands, RPC requests and replies). */
  published: number;
  /** AMQP messages delivered to this process's consumers. */
  delivered: number;
}

/**
 * The probe's counters, and with BENCH_PROBE_STATEMENTS=1 its calls per statement text (folded,
 * first 160 characters) and its AMQP messages published and delivered by routing key or type.
 */
export type ProbeReading = ProbeCounts & { byStatement?: Record<string, number>; byPublished?: Record<string, number>; byDelivered?: Record<string, number> };

/** Asks a probed process (SIGWINCH) for its counters and reads them from `<probeDir>/<pid>.json`. */
export async function readProbe(child: Service, probeDir: string): Promise<ProbeReading> {
  const file = path.join(probeDir, `${child.pid}.json`);
  const asked = Date.now();
  child.kill('SIGWINCH');
  for (const stop = Date.now() + 10_000; Date.now() < stop; await sleep(20)) {
    const counts = await readFile(file, 'utf8')
      .then((t) => JSON.parse(t) as ProbeReading & { at: number })
      .catch(() => null);
    if (counts && counts.at >= asked) return counts;
  }
  throw new Error(`${child.name} (pid ${child.pid}) did not write its probe counters: ${child.tail()}`);
}
