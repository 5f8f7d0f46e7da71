/**
 * `npm run bench:inbound`: signed Meta inbound-message webhooks posted to the gateway at a
 * fixed rate for ~20 s, with gateway, messaging and abuse each in its own process.
 *   - ACK latency p50/p99 (the gateway answers 2xx once messaging stored the inbound receipt)
 *   - messages stored (must equal webhooks acknowledged; duplicates must be 0), after waiting for
 *     the receipt worker to finish, with the worker's processing rate and how far it lagged
 *   - beside them, a bare Node HTTP endpoint's rate measured with the same client in the same run
 *   - per message stored, what each process sent: SQL statements, transactions, AMQP messages
 *     published/delivered (`probe.mjs`), and CPU ms — from just before the load to the last message
 *     stored, less the idle background of the same processes measured over a few seconds before
 *   - opt-out → suppression in force: BENCH_OPTOUTS of the webhooks (spread over the run, each from
 *     a contact of its own) are a "STOP"; from each one's ACK at the gateway to its WhatsApp
 *     suppression row being committed (visible) at the outbox-dispatcher, p50/p99 (read by polling
 *     every 10 ms, so each figure may be up to one poll late)
 * Target on the 2-core reference machine: ≥ 300 webhooks/s with ACK p99 < 100 ms.
 *
 * When the gateway has no Meta ingress (`POST /webhooks/meta` answers 404), the same load goes to
 * messaging's `messaging.inbound.whatsapp` RPC directly, and the report says so.
 *
 * Env: BENCH_RATE (300), BENCH_SECONDS (20), BENCH_CONTACTS (3000), BENCH_DRAIN_SECONDS (180), BENCH_OPTOUTS (60; 0: none
 * and no dispatcher), META_APP_SECRET (the secret the gateway verifies `X-Hub-Signature-256` with),
 * BENCH_STATEMENTS (N: print each process's N most frequent statements, and the AMQP messages it
 * published and was delivered by routing key or type, per message stored; the probe then counts
 * by text).
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceConfig } from '@touchpoint/config';
import { MessagingWhatsAppRpc } from '@touchpoint/contracts';
import { createLogger } from '@touchpoint/observability';
import { RpcClient } from '@touchpoint/runtime';
import { aMetaTextWebhook, createTestWorld, type TestWorld } from '@touchpoint/testing';
import { cpuSeconds, line as harnessLine, pct, type ProbeCounts, type ProbeReading, readProbe, runBench, type Service, sleep, startService, stopServices, waitReady } from './harness.js';

const RATE = Number(process.env.BENCH_RATE ?? 300);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** Distinct senders: each sends RATE×SECONDS/CONTACTS messages, under the 5/min default limit. */
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 3000);
const SECRET = process.env.META_APP_SECRET ?? 'sandbox-meta-app-secret';
const PHONE_NUMBER_ID = '100000000000002';
/** STOP webhooks among the load, from contacts outside the load's own. */
const OPTOUTS = Number(process.env.BENCH_OPTOUTS ?? 60);
/** How often the suppression list is read while waiting for the STOPs, ms. */
const SUPPRESSION_POLL_MS = 10;

const line = (label: string, value: string) => harnessLine(label, value, 46);
/** BENCH_STATEMENTS: how many of each process's most frequent statements to print (0: none). */
const TOP_STATEMENTS = Number(process.env.BENCH_STATEMENTS ?? 0);
// The probe in each service process reads it from the environment the harness passes on.
if (TOP_STATEMENTS > 0) process.env.BENCH_PROBE_STATEMENTS = '1';
/** Seconds of idle background (polls, relays) counted before the load, to subtract from the per-message figures. */
const IDLE_SECONDS = 3;

type Snapshot = Map<Service, ProbeReading & { cpu: number; at: number }>;

async function snapshot(children: Service[], probeDir: string): Promise<Snapshot> {
  const out: Snapshot = new Map();
  await Promise.all(children.map(async (c) => out.set(c, { ...(await readProbe(c, probeDir)), cpu: cpuSeconds(c.pid!), at: Date.now() })));
  return out;
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });

/** POSTs `body` and resolves with the status and the time to the full answer, ms. */
function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(body);
  });
}

/** The webhook body Meta sends for one inbound text (fixtures/meta/webhook-message-text.json). */
function webhook(wamid: string, from: string, text: string, ts: number) {
  return aMetaTextWebhook({ from, text, wamid, timestampSeconds: ts, phoneNumberId: PHONE_NUMBER_ID, profileName: 'Bench Example' });
}

/**
 * Reads the dispatcher's suppression list every SUPPRESSION_POLL_MS and notes when each STOP's row
 * first shows (committed); `finish` keeps reading until every acknowledged STOP is in force or
 * `deadline` (wall-clock ms), and answers each one's delay from its ACK, ms.
 */
function pollSuppressions(world: TestWorld, org: string, acks: Map<string, number>): { finish: (deadline: number) => Promise<{ latencies: number[] }> } {
  const seen = new Map<string, number>();
  let stopAt = Number.POSITIVE_INFINITY;
  const sql = `SELECT value FROM "${world.schema('outbox-dispatcher')}".contact_suppressions WHERE organization_id = $1 AND channel = 'whatsapp'`;
  const loop = (async () => {
    while (Date.now() < stopAt && !(stopAt !== Number.POSITIVE_INFINITY && seen.size >= acks.size)) {
      const rows = await world.sql<{ value: string }>(sql, [org]).catch(() => [] as { value: string }[]);
      const now = Date.now();
      for (const r of rows) if (!seen.has(r.value)) seen.set(r.value, now);
      await new Promise((r) => setTimeout(r, SUPPRESSION_POLL_MS));
    }
  })();
  return {
    finish: async (deadline) => {
      stopAt = deadline;
      await loop;
      const latencies = [...acks.entries()].filter(([v]) => seen.has(v)).map(([v, ack]) => Math.max(0, seen.get(v)! - ack));
      return { latencies };
    },
  };
}

/** The rate a bare Node HTTP server answers with this client (same payload size), for reference. */
async function bareRate(body: string): Promise<number> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"ok":true}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  let done = 0;
  const until = Date.now() + 3000;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (Date.now() < until) {
        await post(url, body, {});
        done++;
      }
    }),
  );
  server.close();
  return done / 3;
}

async function main(): Promise<void> {
  // The services run compiled, as `npm start` and the image run them (no TypeScript loader).
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'ignore' });
  const world: TestWorld = await createTestWorld('bench_inbound');
  const children: Service[] = [];
  const org = `bench-org-${randomBytes(3).toString('hex')}`;
  const probeDir = mkdtempSync(path.join(os.tmpdir(), 'bench-inbound-'));
  try {
    const sample = JSON.stringify(webhook('wamid.sample', '5511900000000', 'sample question about the order', 1_760_000_000));
    const bare = await bareRate(sample);

    const base = 21_000 + Math.floor(Math.random() * 20_000);
    const env = { ...world.env, META_APP_SECRET: SECRET, DB_POOL_SIZE: '20', BUS_PREFETCH: '200' };
    const ports = { abuse: base, messaging: base + 1, gateway: base + 2, 'outbox-dispatcher': base + 3 };
    // The dispatcher takes the suppressions (and the read receipts' enqueues: refused, no sender) only when STOPs are measured.
    const services = OPTOUTS > 0 ? (['abuse', 'messaging', 'gateway', 'outbox-dispatcher'] as const) : (['abuse', 'messaging', 'gateway'] as const);
    for (const svc of services) children.push(startService(svc, env, ports[svc], { probeDir }));
    await Promise.all(services.map((svc, i) => waitReady(children[i], `http://127.0.0.1:${ports[svc]}/health/ready`)));
    await world.sql(`INSERT INTO "${world.schema('messaging')}".whatsapp_senders (phone_number_id, organization_id, sender_id, status, updated_at) VALUES ($1, $2, 'bench-sender', 'connected', now())`, [PHONE_NUMBER_ID, org]);

    const gatewayUrl = `http://127.0.0.1:${ports.gateway}/webhooks/meta`;
    const probe = await post(gatewayUrl, '{}', { 'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update('{}').digest('hex')}` });
    const viaGateway = probe.status !== 404;
    const rpc = new RpcClient(world.config(ServiceConfig), createLogger('bench', 'silent'));

    /** One webhook through the gateway (signed), or straight to the RPC when there is no ingress. */
    const fire = async (body: ReturnType<typeof webhook>): Promise<{ status: number; ms: number }> => {
      if (viaGateway) {
        const raw = JSON.stringify(body);
        return post(gatewayUrl, raw, { 'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}` });
      }
      const started = performance.now();
      const value = body.entry[0].changes[0].value;
      return rpc.call('messaging', MessagingWhatsAppRpc.Inbound, { ...value, phone_number_id: value.metadata.phone_number_id }).then(
        () => ({ status: 200, ms: performance.now() - started }),
        () => ({ status: 503, ms: performance.now() - started }),
      );
    };

    await sleep(1000);
    const idleFrom = await snapshot(children, probeDir);
    await sleep(IDLE_SECONDS * 1000);
    const idleTo = await snapshot(children, probeDir);

    const prefix = `wamid.bench.${randomBytes(3).toString('hex')}.`;
    const total = RATE * SECONDS;
    const latencies: number[] = [];
    const statuses = new Map<number, number>();
    const before = await snapshot(children, probeDir);
    const t0 = performance.now();
    const t0Wall = Date.now();
    const inflight: Promise<void>[] = [];
    /** STOP sender (phone digits, the suppression's value) → wall-clock ms of its ACK. */
    const stopAcks = new Map<string, number>();
    let stopsSent = 0;
    const stopEvery = OPTOUTS > 0 ? Math.max(1, Math.floor(total / OPTOUTS)) : 0;
    const poller = OPTOUTS > 0 ? pollSuppressions(world, org, stopAcks) : null;
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const stop = stopEvery > 0 && i % stopEvery === Math.floor(stopEvery / 2) && stopsSent < OPTOUTS;
      const from = stop ? `55219${String(10_000_000 + i).slice(-8)}` : `55119${String(10_000_000 + (i % CONTACTS)).slice(-8)}`;
      const body = webhook(`${prefix}${i}`, from, stop ? 'STOP' : `question ${i} about the order`, 1_760_000_000 + i);
      if (stop) stopsSent++;
      inflight.push(
        fire(body).then(({ status, ms }) => {
          latencies.push(ms);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (stop && status >= 200 && status < 300) stopAcks.set(from, Date.now());
        }),
      );
    }
    const sendSeconds = (performance.now() - t0) / 1000;
    await Promise.all(inflight);
    const elapsed = (performance.now() - t0) / 1000;
    await rpc.onApplicationShutdown();

    const m = world.schema('messaging');
    const count = async () =>
      (
        await world.sql<{ stored: number; dup: number; first: Date | null; last: Date | null }>(
          `SELECT count(*)::int AS stored, (count(*) - count(DISTINCT external_id))::int AS dup, min(created_at) AS first, max(created_at) AS last FROM "${m}".messages WHERE external_id LIKE $1`,
          [`${prefix}%`],
        )
      )[0]!;
    const acked = [...statuses.entries()].filter(([s]) => s >= 200 && s < 300).reduce((n, [, c]) => n + c, 0);
    // The ACK means "receipt stored"; the worker turns receipts into messages behind it. Wait for it.
    const storedAtLastAck = (await count()).stored;
    const drainDeadline = Date.now() + Number(process.env.BENCH_DRAIN_SECONDS ?? 180) * 1000;
    let settled = await count();
    while (settled.stored < acked && Date.now() < drainDeadline) {
      await new Promise((r) => setTimeout(r, 250));
      settled = await count();
    }
    const after = await snapshot(children, probeDir);
    const { stored, dup } = settled;
    const optOut = poller ? await poller.finish(Date.now() + 60_000) : null;
    const processSeconds = settled.first && settled.last ? (settled.last.getTime() - settled.first.getTime()) / 1000 : NaN;
    latencies.sort((a, b) => a - b);

    process.stdout.write(`bench:inbound — ${viaGateway ? 'signed webhooks → gateway POST /webhooks/meta' : 'gateway has no /webhooks/meta yet: messaging.inbound.whatsapp RPC directly'} → messaging (+ abuse)\n`);
    line('bare Node HTTP endpoint, same client', `${Math.round(bare)} req/s (reference)`);
    line(`offered load`, `${total} webhooks at ${RATE}/s over ${sendSeconds.toFixed(1)} s (all answered after ${elapsed.toFixed(1)} s)`);
    line('answers by status', [...statuses.entries()].map(([s, c]) => `${s}: ${c}`).join(', '));
    line('ACK latency', `p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${latencies[latencies.length - 1]?.toFixed(1)} ms (target p99 < 100)`);
    line('achieved rate', `${Math.round(acked / elapsed)} webhooks/s acknowledged (target ≥ ${RATE})`);
    line('messages stored / acknowledged / duplicates', `${stored} / ${acked} / ${dup}${stored === acked && dup === 0 ? ' (ok)' : ' (MISMATCH)'}`);
    line('processing behind the ACK', `${storedAtLastAck} stored when the last ACK went out; all stored ${(settled.last ? (settled.last.getTime() - t0Wall) / 1000 - elapsed : NaN).toFixed(1)} s after it`);
    line('processing rate (first → last message stored)', `${Math.round(stored / processSeconds)} messages/s`);
    const per = (v: number) => (stored > 0 ? v / stored : NaN);
    for (const c of children) {
      const a = after.get(c)!;
      const b = before.get(c)!;
      const i0 = idleTo.get(c)!;
      const i1 = idleFrom.get(c)!;
      const idleShare = (a.at - b.at) / (i0.at - i1.at);
      const d = (k: keyof ProbeCounts | 'cpu') => per(a[k] - b[k] - (i0[k] - i1[k]) * idleShare);
      line(`per message stored: ${c.name}`, `${d('statements').toFixed(2)} SQL, ${d('transactions').toFixed(2)} tx, ${d('published').toFixed(2)} published, ${d('delivered').toFixed(2)} delivered, ${(d('cpu') * 1000).toFixed(2)} CPU ms`);
    }
    // BENCH_STATEMENTS=N: what each process sent and received over the run, per message stored (idle background included).
    if (TOP_STATEMENTS > 0)
      for (const c of children) {
        const a = after.get(c)!;
        const b = before.get(c)!;
        const top = (field: 'byStatement' | 'byPublished' | 'byDelivered', n: number) =>
          Object.entries(a[field] ?? {})
            .map(([key, calls]) => [key, calls - (b[field]?.[key] ?? 0)] as const)
            .filter(([, calls]) => calls > 0)
            .sort((x, y) => y[1] - x[1])
            .slice(0, n)
            .map(([key, calls]) => `      ${per(calls).toFixed(2).padStart(6)}  ${key}`)
            .join('\n');
        process.stdout.write(`  ${c.name} statements:\n${top('byStatement', TOP_STATEMENTS)}\n    published:\n${top('byPublished', 50)}\n    delivered:\n${top('byDelivered', 50)}\n`);
      }
    if (optOut) {
      const lag = optOut.latencies.sort((a, b) => a - b);
      line('opt-out ACK → suppression in force', `p50 ${pct(lag, 50).toFixed(0)} ms, p99 ${pct(lag, 99).toFixed(0)} ms, max ${lag[lag.length - 1]?.toFixed(0)} ms (${lag.length}/${stopAcks.size} STOPs in force; poll ${SUPPRESSION_POLL_MS} ms)`);
    }
  } finally {
    await stopServices(children);
    await world.close();
    agent.destroy();
    rmSync(probeDir, { recursive: true, force: true });
  }
}

runBench('bench:inbound', main);
