/**
 * `npm run bench:bus`: events written in business transactions by one service and
 * handled by a consumer in another process, 1 KB payloads.
 *   phase 1: as fast as possible for ~10 s → end-to-end events/s
 *   phase 2: a fixed 500 events/s for ~10 s → commit→handled latency p50/p99
 * Beside them, the raw rate of amqplib publishing 1 KB messages with batched confirms, measured in
 * the same run, and each service's resident memory when idle after start-up.
 * Targets on the 2-core reference machine: ≥ 2,000 events/s, p99 < 100 ms, ≤ 200 MB per service.
 */
import 'reflect-metadata';
import amqplib from 'amqplib';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ServiceConfig } from '@touchpoint/config';
import { UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld } from '@touchpoint/testing';
import { probeEvent, probeService } from '../bus/probe.js';
import { runBench } from './harness.js';

const PAYLOAD = randomBytes(384).toString('base64'); // 512 chars ≈ with the envelope, ~1 KB on the wire
const THROUGHPUT_EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const FIXED_RATE = 500;
/** Pool size of both services: commits from more connections share fsyncs (group commit). */
const POOL = process.env.BENCH_DB_POOL_SIZE ?? '20';
const WRITERS = Number(process.env.BENCH_WRITERS ?? 32);
const FIXED_SECONDS = Number(process.env.BENCH_FIXED_SECONDS ?? 10);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const line = (label: string, value: string) => process.stdout.write(`${label.padEnd(44)} ${value}\n`);

async function rawPublishRate(url: string, namespace: string): Promise<number> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createConfirmChannel();
  const q = `${namespace}.bench.raw`;
  await ch.assertQueue(q, { durable: true });
  const body = Buffer.from(JSON.stringify({ data: PAYLOAD, pad: PAYLOAD }));
  const n = 20_000;
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    ch.sendToQueue(q, body, { persistent: true });
    if (i % 500 === 499) await ch.waitForConfirms();
  }
  await ch.waitForConfirms();
  const rate = n / ((performance.now() - started) / 1000);
  await ch.deleteQueue(q);
  await conn.close();
  return rate;
}

async function main(): Promise<void> {
  const world = await createTestWorld('bench_bus');
  const children: ChildProcess[] = [];
  try {
    const raw = await rawPublishRate(world.amqpUrl, world.namespace);

    const consumer = spawn(process.execPath, ['--import', '@swc-node/register/esm-register', 'test/bench/bus-consumer.ts'], {
      env: { ...process.env, ...world.env, PORT: '0', BUS_PREFETCH: '200', DB_POOL_SIZE: POOL },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(consumer);
    await new Promise<void>((resolve, reject) => {
      consumer.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      consumer.on('exit', (code) => reject(new Error(`consumer exited ${code}`)));
    });
    const producer = await world.start(probeService('outreach', world.config(ServiceConfig, { DB_POOL_SIZE: POOL }), false));
    const uow = producer.get(UnitOfWork);
    const followups = world.schema('followups');
    const outreach = world.schema('outreach');

    const write = (id: string, seq: number) =>
      uow.run(async (tx) => {
        await tx.query(`INSERT INTO probe_handled (event_id, seq) VALUES ($1, $2)`, [`business-${id}`, seq]);
        await tx.publish({ ...probeEvent(id, seq), data: { seq, body: PAYLOAD } });
      });
    const handledCount = async (prefix: string) => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${followups}".probe_handled WHERE event_id LIKE $1`, [`${prefix}%`]))[0].n;

    // Phase 1: throughput.
    const p1 = `t-${randomBytes(3).toString('hex')}-`;
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < THROUGHPUT_EVENTS && Date.now() - started < 15_000) {
          const i = next++;
          await write(`${p1}${i}`, i);
        }
      }),
    );
    const written = next;
    const writeSeconds = (Date.now() - started) / 1000;
    while ((await handledCount(p1)) < written && Date.now() - started < 60_000) await new Promise((r) => setTimeout(r, 100));
    const [{ last }] = await world.sql<{ last: Date }>(`SELECT max(handled_at) AS last FROM "${followups}".probe_handled WHERE event_id LIKE $1`, [`${p1}%`]);
    const e2eSeconds = (last.getTime() - started) / 1000;

    // Phase 2: fixed rate, commit→handled latency.
    const p2 = `l-${randomBytes(3).toString('hex')}-`;
    const committedAt = new Map<string, number>();
    const total = FIXED_RATE * FIXED_SECONDS;
    const t0 = Date.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / FIXED_RATE;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const id = `${p2}${i}`;
      inflight.push(write(id, i).then(() => void committedAt.set(id, Date.now())));
    }
    await Promise.all(inflight);
    while ((await handledCount(p2)) < total && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 100));
    const rows = await world.sql<{ event_id: string; at: number }>(`SELECT event_id, (EXTRACT(EPOCH FROM handled_at) * 1000)::float8 AS at FROM "${followups}".probe_handled WHERE event_id LIKE $1`, [`${p2}%`]);
    const latencies = rows.map((r) => r.at - (committedAt.get(r.event_id) ?? r.at)).sort((a, b) => a - b);
    const [{ dup }] = await world.sql<{ dup: number }>(`SELECT (count(*) - count(DISTINCT event_id))::int AS dup FROM "${followups}".probe_handled WHERE event_id LIKE 'l-%' OR event_id LIKE 't-%'`);
    const [{ unpublished }] = await world.sql<{ unpublished: number }>(`SELECT count(*)::int AS unpublished FROM "${outreach}".outbox_events WHERE published_at IS NULL`);

    process.stdout.write('bench:bus — transactional outbox → RabbitMQ → inbox consumer (1 KB events)\n');
    line('raw amqplib publish, batched confirms', `${Math.round(raw)} msg/s (reference)`);
    line('phase 1 written in business transactions', `${written} events in ${writeSeconds.toFixed(1)} s = ${Math.round(written / writeSeconds)} /s`);
    line('phase 1 end to end (commit → handled)', `${Math.round(written / e2eSeconds)} events/s (target ≥ 2000; ${((written / e2eSeconds / raw) * 100).toFixed(0)}% of raw)`);
    line(`phase 2 latency at ${FIXED_RATE}/s, ${latencies.length} events`, `p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms (target p99 < 100)`);
    line('duplicates handled / left unpublished', `${dup} / ${unpublished}`);
    await reportIdleMemory(world.env);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await world.close();
  }
}

/**
 * Starts every service as its own process from the compiled build (`npm run build`, as `npm start`
 * and the image run them), waits for ready, idles 3 s, and prints VmRSS of each.
 */
async function reportIdleMemory(env: Record<string, string>): Promise<void> {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'ignore' });
  const services = ['gateway', 'followups', 'outreach', 'messaging', 'outbox-dispatcher', 'abuse', 'ai-gateway'] as const;
  const offset = 20_000 + Math.floor(Math.random() * 20_000);
  const procs = services.map((svc, i) => {
    const port = offset + i;
    const child = spawn(process.execPath, [`dist/apps/${svc}/src/main.js`], {
      env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    return { svc, port, child, stderr: () => stderr };
  });
  try {
    const deadline = Date.now() + 60_000;
    for (const p of procs) {
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${p.port}/health/ready`)
          .then((r) => r.ok)
          .catch(() => false);
        if (ok) break;
        if (p.child.exitCode !== null || Date.now() > deadline) throw new Error(`${p.svc} did not become ready: ${p.stderr().slice(-300)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await new Promise((r) => setTimeout(r, 3000));
    const parts = procs.map((p) => {
      const status = readFileSync(`/proc/${p.child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      return `${p.svc} ${Math.round(kb / 1024)}`;
    });
    line('idle resident memory, MB (target ≤ 200 each)', parts.join(', '));
  } catch (err) {
    line('idle resident memory', `not measured: ${(err as Error).message}`);
  } finally {
    for (const p of procs) p.child.kill('SIGTERM');
  }
}

runBench('bench:bus', main);
