/**
 * `npm run bench:gateway`: an authenticated read forwarded by RPC — `GET /contacts/{contact_id}`
 * with an API key: the guard reads the key and its creator, the gateway calls messaging's
 * `messaging.contact.get` over RabbitMQ, messaging reads the row — beside a bare Fastify route of
 * the same gateway process (`GET /bench/bare`, see gateway-bare-route.mjs: the gateway's Fastify
 * hooks, no guard, no RPC), at increasing concurrency (closed loop: each of N clients sends its next
 * request when the last one answered), BENCH_SECONDS per route and level, the two routes taking
 * turns. Gateway and messaging are their own compiled processes.
 * Targets (DESIGN §3's gateway is thin): at the highest level where the bare route's p99 is under
 * 5 ms, the forwarded read's p99 is under 25 ms; and the forwarded read's best req/s is at least
 * 0.1 × the bare route's best req/s. The client is this one Node process (keep-alive, one socket per
 * client), on the same 2 cores.
 *
 * Env: BENCH_LEVELS (concurrency levels, default "1,4,16,64"), BENCH_SECONDS (per route and level, default 5).
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Scope } from '@touchpoint/contracts';
import { createTestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders } from '../gateway/gateway-world.js';
import { mkdtempSync, rmSync } from 'node:fs';
import pg from 'pg';
import { cpuSeconds, line, pct, sleep, type ProbeCounts, readProbe, runBench, type Service, startService, stopServices, waitReady } from './harness.js';

const LEVELS = (process.env.BENCH_LEVELS ?? '1,4,16,64').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const BARE_P99_MS = 5;
const FORWARDED_P99_MS = 25;
const MIN_RATE_RATIO = 0.1;
/** Forwarded reads sent one after another between two probe readings, for the per-request counts. */
const COUNTED_READS = 300;
/** Seconds of idleness measured first, to take the processes' background CPU off the per-request figures. */
const IDLE_SECONDS = 3;

/** The first non-200 answer of the run (status and the start of its body), reported beside the table. */
let firstError: string | undefined;

interface Run {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** GETs `url` with `headers` from `clients` closed-loop clients for `seconds`: rate and latency of the 200s. */
async function load(url: string, headers: Record<string, string>, clients: number, seconds: number): Promise<Run> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const get = () =>
    new Promise<{ status: number; ms: number }>((resolve) => {
      const started = performance.now();
      const req = http.get(url, { agent, headers }, (res) => {
        let body = '';
        if (res.statusCode !== 200) res.on('data', (d) => (body += d));
        else res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) firstError ??= `${res.statusCode} ${body.slice(0, 300)}`;
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started });
        });
      });
      req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    });
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const { status, ms } = await get();
        if (status === 200) latencies.push(ms);
        else errors++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / elapsed, p50: pct(latencies, 50), p99: pct(latencies, 99), errors };
}

async function main(): Promise<void> {
  // The services run compiled, as `npm start` and the image run them (no TypeScript loader).
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'ignore' });
  const world = await createTestWorld('bench_gateway');
  const children: Service[] = [];
  const cleanups: (() => void)[] = [];
  try {
    // An organization, an admin member and a key that may read and write contacts, through the gateway's own rules (in-process, closed again).
    const config = world.config(GatewayConfig);
    const setup = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    const key = await gatewayBuilders(setup).organizationWithKey({ scopes: [Scope.MessagingRead, Scope.MessagingWrite] });
    await setup.close();

    const base = 21_000 + Math.floor(Math.random() * 20_000);
    const env = { ...world.env, DB_POOL_SIZE: '10' };
    const probeDir = mkdtempSync(path.join(os.tmpdir(), 'bench-gateway-'));
    cleanups.push(() => rmSync(probeDir, { recursive: true, force: true }));
    const messaging = startService('messaging', env, base, { probeDir });
    const gateway = startService('gateway', env, base + 1, { script: 'test/bench/gateway-bare-route.mjs', probeDir });
    children.push(messaging, gateway);
    await Promise.all([waitReady(messaging, `http://127.0.0.1:${base}/health/ready`), waitReady(gateway, `http://127.0.0.1:${base + 1}/health/ready`)]);
    const gatewayUrl = `http://127.0.0.1:${base + 1}`;
    const auth = { authorization: `Bearer ${key.secret}` };
    const created = await fetch(`${gatewayUrl}/contacts`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Ana Example', phone: '+55 11 98765-4321' }),
    });
    if (created.status !== 201) throw new Error(`contact not created: ${created.status} ${await created.text()}`);
    const { id: contact_id } = (await created.json()) as { id: string };
    const bareUrl = `${gatewayUrl}/bench/bare`;
    const readUrl = `${gatewayUrl}/contacts/${contact_id}`;
    const probe = await fetch(bareUrl);
    if (probe.status !== 200) throw new Error(`the bare route answered ${probe.status}`);

    // Warm-up: JIT, pools, the RPC reply queue.
    await load(bareUrl, {}, 4, 2);
    await load(readUrl, auth, 4, 2);

    // Per-request cost, counted: what each process sent to PostgreSQL and RabbitMQ for COUNTED_READS
    // reads, and the CPU time it spent on them (the gateway's, messaging's, and their PostgreSQL
    // backends'; RabbitMQ's broker is shared with other users of the machine and not counted).
    const admin = new pg.Client({ connectionString: world.databaseUrl });
    await admin.connect();
    const backends = async () => (await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1`, [`touchpoint:${world.namespace}\\_%`])).rows.map((r) => r.pid);
    const cpu = async () => {
      const pids = await backends();
      return { gateway: cpuSeconds(gateway.pid!), messaging: cpuSeconds(messaging.pid!), postgres: pids.reduce((sum, pid) => sum + (cpuSeconds(pid) || 0), 0) };
    };
    const sequential = async (url: string, headers: Record<string, string>) => {
      for (let i = 0; i < COUNTED_READS; i++) {
        const r = await fetch(url, { headers });
        if (r.status !== 200) throw new Error(`${url} answered ${r.status}: ${await r.text()}`);
        await r.arrayBuffer();
      }
    };
    // The processes' own background work (poll loops, relays, metrics) is measured idle and taken off.
    const timed = async (work: () => Promise<unknown>) => {
      const [c0, t0] = [await cpu(), performance.now()];
      await work();
      const [c1, t1] = [await cpu(), performance.now()];
      return { cpu: Object.fromEntries(Object.keys(c0).map((k) => [k, c1[k as keyof typeof c1] - c0[k as keyof typeof c0]])), seconds: (t1 - t0) / 1000 };
    };
    const idle = await timed(() => sleep(IDLE_SECONDS * 1000));
    const bareCost = await timed(() => sequential(bareUrl, {}));
    const before = await Promise.all([readProbe(gateway, probeDir), readProbe(messaging, probeDir)]);
    const readCost = await timed(() => sequential(readUrl, auth));
    const after = await Promise.all([readProbe(gateway, probeDir), readProbe(messaging, probeDir)]);
    await admin.end();
    const perRead = (i: number, k: keyof ProbeCounts) => ((after[i][k] - before[i][k]) / COUNTED_READS).toFixed(2);
    const cpuMs = (cost: { cpu: Record<string, number>; seconds: number }, k: string) => (((cost.cpu[k] - (idle.cpu[k] * cost.seconds) / idle.seconds) * 1000) / COUNTED_READS).toFixed(2);

    const results: { level: number; bare: Run; read: Run }[] = [];
    for (const level of LEVELS) {
      const bare = await load(bareUrl, {}, level, SECONDS);
      const read = await load(readUrl, auth, level, SECONDS);
      results.push({ level, bare, read });
    }

    const ms = (v: number) => (Number.isNaN(v) ? '-' : v.toFixed(1));
    process.stdout.write(`bench:gateway — GET /contacts/{id} (API key, RPC to messaging) beside GET /bench/bare, same gateway process; ${SECONDS} s per route and level\n`);
    const widths = [11, 10, 9, 9, 10, 9, 9, 8, 6];
    const row = (cells: string[]) => process.stdout.write(cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' ') + '\n');
    row(['clients', 'bare r/s', 'p50 ms', 'p99 ms', 'read r/s', 'p50 ms', 'p99 ms', 'ratio', 'errors']);
    for (const { level, bare, read } of results) {
      row([String(level), bare.rps.toFixed(0), ms(bare.p50), ms(bare.p99), read.rps.toFixed(0), ms(read.p50), ms(read.p99), (read.rps / bare.rps).toFixed(2), String(bare.errors + read.errors)]);
    }
    if (firstError) line('first non-200 answer', firstError, 58);
    for (const [i, svc] of ['gateway', 'messaging'].entries()) {
      line(`per read, ${svc}: SQL statements / transactions / round trips`, `${perRead(i, 'statements')} / ${perRead(i, 'transactions')} / ${perRead(i, 'roundTrips')}`, 58);
      line(`per read, ${svc}: AMQP published / delivered`, `${perRead(i, 'published')} / ${perRead(i, 'delivered')}`, 58);
    }
    line('CPU ms per read (idle taken off): gateway / messaging / postgres', ['gateway', 'messaging', 'postgres'].map((k) => cpuMs(readCost, k)).join(' / '), 58);
    line('CPU ms per bare request: gateway', cpuMs(bareCost, 'gateway'), 58);
    const under = results.filter((r) => r.bare.p99 < BARE_P99_MS);
    const at = under.length ? under[under.length - 1] : undefined;
    line(
      `target: read p99 < ${FORWARDED_P99_MS} ms where bare p99 < ${BARE_P99_MS} ms`,
      at ? `${ms(at.read.p99)} ms at ${at.level} clients (bare p99 ${ms(at.bare.p99)} ms, ${at.bare.rps.toFixed(0)} r/s) ${at.read.p99 < FORWARDED_P99_MS ? 'PASS' : 'FAIL'}` : `no level had bare p99 < ${BARE_P99_MS} ms: not judged (machine too busy)`,
      58,
    );
    const bestBare = Math.max(...results.map((r) => r.bare.rps));
    const bestRead = Math.max(...results.map((r) => r.read.rps));
    line(`target: best read r/s ≥ ${MIN_RATE_RATIO} × best bare r/s`, `${bestRead.toFixed(0)} / ${bestBare.toFixed(0)} = ${(bestRead / bestBare).toFixed(2)}× ${bestRead >= MIN_RATE_RATIO * bestBare ? 'PASS' : 'FAIL'}`, 58);
    line('load average (1 min) at the end', `${os.loadavg()[0].toFixed(1)} (${os.cpus().length} cores)`, 58);
  } finally {
    await stopServices(children);
    await world.close();
    for (const cleanup of cleanups) cleanup();
  }
}

runBench('bench:gateway', main);
