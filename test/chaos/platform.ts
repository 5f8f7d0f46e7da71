/**
 * The platform the chaos harness (issue 17) runs against: every service started from the compiled
 * build (`dist/`, as `npm start` starts it), with replicas, in a test world of its own (schema
 * prefix, bus namespace, free ports) so it can run beside other test files. Each service process
 * reaches PostgreSQL and RabbitMQ through TCP proxies of its own, so the harness can cut one
 * process off without touching the machine's shared servers.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_SCOPES, SERVICES, type ServiceName } from '@touchpoint/contracts';
import { createTestWorld, freePort, TcpProxy, TEST_AMQP_URL, TEST_DATABASE_URL, type TestWorld } from '@touchpoint/testing';
import { type AdminCli, compiledAdminCli } from '../../scripts/start/admin-cli.js';
import { OutputTail } from './tail.js';
import type { ChaosTarget, ParkedMessage } from './types.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHILD_GUARD = path.join(ROOT, 'scripts/start/child-guard.mjs');

/** Processes of each service in a chaos run (the platform: two of each loop owner). */
export const DEFAULT_REPLICAS: Record<ServiceName, number> = {
  gateway: 1,
  followups: 2,
  outreach: 2,
  messaging: 2,
  'outbox-dispatcher': 2,
  abuse: 1,
  'ai-gateway': 1,
};

/**
 * How long one process may take to answer `/health/ready`, ms: twelve processes boot at once on 2
 * cores that other test files share (each needs a few CPU-seconds to load).
 */
export const READY_TIMEOUT_MS = 300_000;

/** Characters of a process's output an error message quotes (its kept tail is `OutputTail`'s, larger). */
const MESSAGE_TAIL_CHARS = 4000;

/** Why a process exited, and whether the harness asked for it. */
export interface ProcessExit {
  at: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the harness killed or stopped it; false is a crash. */
  expected: boolean;
}

/**
 * One OS process of the run: a service replica (with its own database and broker proxies) or the
 * sandbox (no proxies: it uses neither).
 */
export class ChaosProcess {
  child?: ChildProcess;
  readonly exits: ProcessExit[] = [];
  private readonly tail = new OutputTail();
  private expectingExit = false;
  /** Set by the platform's `stop()`: from then on `start()` does nothing (no restart outlives the run). */
  retired = false;
  /** Called when the process exits without being asked to. */
  onCrash: (p: ChaosProcess, exit: ProcessExit) => void = () => undefined;

  constructor(
    /** `messaging#2`, `gateway#1`, `sandbox`. */
    readonly name: string,
    readonly service: ServiceName | 'sandbox',
    /** Its HTTP port (the public API for the gateway, health/metrics for the others). */
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
    readonly db?: TcpProxy,
    readonly amqp?: TcpProxy,
  ) {}

  get alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The last lines it printed, stdout and stderr interleaved (at most 200 lines, 64 KB: `OutputTail`). */
  output(): string {
    return this.tail.text();
  }

  /** Spawns `dist/apps/<service>/src/main.js` (no-op when it is running or retired). */
  start(): void {
    if (this.alive || this.retired) return;
    this.expectingExit = false;
    // As `npm start` runs it, less --enable-source-maps: twelve processes loading every source map
    // at once is CPU a 2-core machine does not have to spare (stack traces name dist/ lines).
    const child = spawn(process.execPath, ['--import', CHILD_GUARD, path.join(ROOT, 'dist/apps', this.service, 'src/main.js')], {
      cwd: ROOT,
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    // CHAOS_LOG_DIR keeps everything a process printed (all its lives), beside the kept tail.
    const full = process.env.CHAOS_LOG_DIR ? (mkdirSync(process.env.CHAOS_LOG_DIR, { recursive: true }), createWriteStream(path.join(process.env.CHAOS_LOG_DIR, `${this.name.replace(/[^a-z0-9-]+/gi, '-')}.log`), { flags: 'a' })) : null;
    const keep = (d: Buffer) => {
      this.tail.push(d);
      full?.write(d);
    };
    child.once('close', () => full?.end());
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('exit', (code, signal) => {
      const exit: ProcessExit = { at: Date.now(), code, signal, expected: this.expectingExit };
      this.exits.push(exit);
      if (!exit.expected) this.onCrash(this, exit);
    });
  }

  /** The last answer of `/health/ready` (status and body), for error messages. */
  private lastProbe = 'no answer yet';

  /** Answers whether `/health/ready` says 200 right now. */
  async ready(): Promise<boolean> {
    if (!this.alive) return false;
    const res = await fetch(`${this.url}/health/ready`, { signal: AbortSignal.timeout(5000) }).catch((err: Error) => {
      this.lastProbe = err.message;
      return undefined;
    });
    if (res) this.lastProbe = `${res.status} ${(await res.text().catch(() => '')).slice(0, 500)}`;
    return res?.status === 200;
  }

  /**
   * Waits until `/health/ready` answers 200.
   * @throws Error with its last output when it exits first or is not ready within `timeoutMs`
   */
  async waitReady(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await this.ready()) return;
      if (!this.alive) throw new Error(`${this.name} exited before it was ready (${JSON.stringify(this.exits.at(-1))}):\n${this.output().slice(-MESSAGE_TAIL_CHARS)}`);
      if (Date.now() > deadline) throw new Error(`${this.name} was not ready within ${timeoutMs} ms (last probe: ${this.lastProbe}):\n${this.output().slice(-MESSAGE_TAIL_CHARS)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Sends `signal` and waits for the exit; still alive after `graceMs`, it gets SIGKILL. Never a crash. */
  async kill(signal: NodeJS.Signals = 'SIGKILL', graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return;
    this.expectingExit = true;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** The sandbox's control API (README "The sandbox's control API"). */
export class SandboxControl {
  constructor(readonly url: string) {}

  /**
   * POSTs `body` as JSON to `path`; answers the parsed answer.
   * @throws Error naming the path and status on a non-2xx answer
   */
  async post<T = unknown>(pathname: string, body: unknown): Promise<T> {
    const res = await fetch(`${this.url}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    if (!res.ok) throw new Error(`sandbox ${pathname} answered ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  async get<T = unknown>(pathname: string): Promise<T> {
    const res = await fetch(`${this.url}${pathname}`, { signal: AbortSignal.timeout(30_000) });
    if (!res.ok) throw new Error(`sandbox ${pathname} answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as T;
  }

  /** Queues provider faults (apps/sandbox fault-registry: timeout, drop, error, latency). */
  fault(provider: 'meta' | 'nylas' | 'unipile', ...faults: Record<string, unknown>[]): Promise<{ scripted: number }> {
    return this.post(`/sandbox/control/${provider}/faults`, { faults });
  }

  clearFaults(provider: 'meta' | 'nylas' | 'unipile'): Promise<unknown> {
    return fetch(`${this.url}/sandbox/control/${provider}/faults`, { method: 'DELETE' }).then((r) => r.json());
  }

  /** Changes the Meta stand-in's settings (webhook_faults among them); answers the settings now in force. */
  metaSettings(settings: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.post('/sandbox/meta/settings', settings);
  }
}

/**
 * Where the chaos platform's settings differ from the defaults (README "What survives what"), and
 * why: outreach's due sweep, the path that asks again for an approved action whose execution failed
 * for good, runs every minute instead of five (one pass is two indexed reads; a minute is a
 * sensible production setting too), so the drain need not last five minutes to see it recover.
 */
export const CHAOS_SERVICE_ENV = { OUTREACH_SWEEP_INTERVAL_MS: '60000' } as const;

/**
 * The longest documented time the platform takes to finish a send after the last fault, ms: an
 * outreach run a killed process held waits out its lease (OUTREACH_RUN_LEASE_MS, 30 s), a run that
 * then fails five times spends its backoff (2 + 4 + 8 + 16 s), and the due sweep asks again within
 * its interval (CHAOS_SERVICE_ENV, 60 s). `npm run chaos` never drains for less.
 */
export const RECOVERY_BOUND_MS = 30_000 + 30_000 + Number(CHAOS_SERVICE_ENV.OUTREACH_SWEEP_INTERVAL_MS);

/** Options of `ChaosPlatform.start`. */
export interface ChaosPlatformOptions {
  seed: number;
  /** Processes per service; missing services get DEFAULT_REPLICAS. */
  replicas?: Partial<Record<ServiceName, number>>;
  /** Names the test world (schemas `t_<label>_…`). */
  label?: string;
  /** Extra environment for every service (e.g. shorter sweeps for a short run). */
  env?: Record<string, string>;
  log?: (line: string) => void;
  /**
   * Called with the platform as soon as its test world exists, before anything boots: a caller that
   * must stop it on a signal (`npm run chaos`) holds it from then on.
   */
  onCreated?: (platform: ChaosPlatform) => void;
}

/**
 * The running platform: the target the workload drives, and the handles the fault injector pulls
 * (processes to kill, their proxies to cut, the sandbox to script).
 */
export class ChaosPlatform {
  readonly processes: ChaosProcess[] = [];
  sandboxProcess!: ChaosProcess;
  sandbox!: SandboxControl;
  target!: ChaosTarget;
  cli!: AdminCli;
  /** Crashes (exits the harness did not ask for), each already restarted. */
  readonly crashes: string[] = [];
  private stopping = false;
  private stopped?: Promise<void>;
  /** The boot under way: `stop()` waits for it to give up before dropping the schemas a migration may still be writing. */
  private booting?: Promise<void>;

  private constructor(
    readonly world: TestWorld,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Builds `dist/` (scripts/build.mjs, as `npm start` does; seconds when little changed), migrates
   * every schema with the compiled admin CLI (as `npm start` does), starts the sandbox and every replica, waits until all are
   * ready, and makes an organization, an admin member and an all-scopes key with the CLI.
   * @throws Error when the build fails or a process does not get ready (everything started is stopped)
   */
  static async start(options: ChaosPlatformOptions): Promise<ChaosPlatform> {
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'ignore' });
    for (const service of [...SERVICES, 'sandbox', 'cli']) {
      if (!existsSync(path.join(ROOT, 'dist/apps', service, 'src/main.js'))) throw new Error(`dist/apps/${service} is missing: run \`npm run build\` first`);
    }
    const world = await createTestWorld(options.label ?? 'chaos');
    const platform = new ChaosPlatform(world, options.log ?? (() => undefined));
    platform.log(`test world ${world.namespace}: ${platform.leftovers()}`);
    options.onCreated?.(platform);
    try {
      platform.booting = platform.boot(options);
      await platform.booting;
    } catch (err) {
      await platform.stop().catch(() => undefined);
      throw err;
    }
    return platform;
  }

  private async boot(options: ChaosPlatformOptions): Promise<void> {
    const { PORT: _port, ...worldEnv } = this.world.env;
    const base: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...worldEnv,
      LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
      NO_COLOR: '1',
      // Twelve processes share the machine's PostgreSQL (100 connections) with other test files.
      DB_POOL_SIZE: '3',
      ...CHAOS_SERVICE_ENV,
    };
    this.cli = compiledAdminCli(ROOT, base);
    this.log('migrating every schema (admin CLI: migrate)');
    await this.cli.run(['migrate']);

    const sandboxPort = await freePort();
    const gatewayPort = await freePort();
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    this.sandboxProcess = new ChaosProcess('sandbox', 'sandbox', sandboxPort, { ...base, PORT: String(sandboxPort), GATEWAY_URL: gatewayUrl });
    this.sandbox = new SandboxControl(sandboxUrl);

    const replicas = { ...DEFAULT_REPLICAS, ...options.replicas };
    for (const service of SERVICES) {
      for (let i = 1; i <= replicas[service]; i++) {
        // Stopped while booting (a signal): a proxy opened now would outlive the run.
        if (this.stopping) throw new Error('the platform was stopped while it started');
        const db = new TcpProxy(new URL(TEST_DATABASE_URL).hostname, Number(new URL(TEST_DATABASE_URL).port || 5432));
        const amqp = new TcpProxy(new URL(TEST_AMQP_URL).hostname, Number(new URL(TEST_AMQP_URL).port || 5672));
        const databaseUrl = new URL(TEST_DATABASE_URL);
        databaseUrl.host = `127.0.0.1:${await db.start()}`;
        const amqpUrl = new URL(TEST_AMQP_URL);
        amqpUrl.host = `127.0.0.1:${await amqp.start()}`;
        const port = service === 'gateway' && i === 1 ? gatewayPort : await freePort();
        const env: NodeJS.ProcessEnv = { ...base, ...options.env, PORT: String(port), DATABASE_URL: databaseUrl.toString(), AMQP_URL: amqpUrl.toString() };
        // What `npm start` gives these children (scripts/start/main.ts childEnv): the sandbox as every provider.
        if (service === 'outbox-dispatcher') Object.assign(env, { WHATSAPP_GRAPH_BASE_URL: sandboxUrl, NYLAS_API_BASE_URL: sandboxUrl, UNIPILE_API_BASE_URL: sandboxUrl });
        if (service === 'ai-gateway') env.AI_BASE_URL = `${sandboxUrl}/v1`;
        const proc = new ChaosProcess(`${service}#${i}`, service, port, env, db, amqp);
        proc.onCrash = (p, exit) => this.crashed(p, exit);
        this.processes.push(proc);
      }
    }
    this.sandboxProcess.onCrash = (p, exit) => this.crashed(p, exit);
    if (this.stopping) throw new Error('the platform was stopped while it started');

    this.log(`starting the sandbox and ${this.processes.length} service processes`);
    const started = Date.now();
    this.sandboxProcess.start();
    for (const p of this.processes) p.start();
    await Promise.all([this.sandboxProcess, ...this.processes].map((p) => p.waitReady()));
    this.log(`every process is ready (${Math.round((Date.now() - started) / 1000)} s)`);
    // Meta retries a webhook it could not deliver for hours; ten tries over ~55 s outlast a gateway
    // restart here, so a webhook is lost only when the platform really refuses it.
    await this.sandbox.metaSettings({ webhook_retries: 10, webhook_retry_delay_ms: 1000 });

    const org = await this.cli.run<{ id: string }>(['org:create', '--name', `Chaos ${options.seed}`]);
    const member = await this.cli.run<{ id: string }>(['member:add', '--org', org.id, '--email', `admin@${org.id.slice(0, 8)}.chaos.test`, '--role', 'admin', '--name', 'Chaos Admin']);
    const key = await this.cli.run<{ id: string; secret: string }>(['apikey:create', '--org', org.id, '--member', member.id, '--scopes', API_SCOPES.join(','), '--name', 'chaos']);
    this.target = { gatewayUrl, sandboxUrl, apiKey: key.secret, organizationId: org.id, seed: options.seed };
  }

  /** A process died on its own: note it and restart it, as a supervisor (Kubernetes, systemd) would. */
  private crashed(p: ChaosProcess, exit: ProcessExit): void {
    if (this.stopping) return;
    const line = `${p.name} crashed (code ${exit.code}, signal ${exit.signal}) at ${new Date(exit.at).toISOString()}: ${crashExcerpt(p.output())}`;
    this.crashes.push(line);
    this.log(line);
    setTimeout(() => {
      if (!this.stopping) p.start();
    }, 1000).unref();
  }

  /** The service replicas (the sandbox not among them). */
  replicasOf(service: ServiceName): ChaosProcess[] {
    return this.processes.filter((p) => p.service === service);
  }

  /** Every proxy open, every process up: waits until each answers ready. */
  async heal(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    for (const p of this.processes) {
      p.db?.restore();
      p.amqp?.restore();
      if (!p.alive) p.start();
    }
    if (!this.sandboxProcess.alive) this.sandboxProcess.start();
    await Promise.all([this.sandboxProcess, ...this.processes].map((p) => p.waitReady(timeoutMs)));
  }

  /**
   * What the run keeps on the machine's servers until `stop()`, and how to drop it by hand (a run
   * killed with SIGKILL never gets to `stop()`).
   */
  leftovers(): string {
    const ns = this.world.namespace;
    const amqp = new URL(TEST_AMQP_URL);
    // An AMQP URL's path names the vhost; none is the default vhost `/`.
    const vhost = amqp.pathname.length > 1 ? decodeURIComponent(amqp.pathname.slice(1)) : '/';
    return `schemas ${ns}_*, row ${ns} of public.test_namespaces, queues and exchanges ${ns}.* (vhost ${vhost} of ${amqp.host}); dropped at the end, by hand with \`node --import @swc-node/register/esm-register test/prepare-test-database.ts ${ns}\``;
  }

  /**
   * SIGKILLs every process now, without waiting (the harness is about to exit with its teardown
   * unfinished); the schemas and the bus namespace stay, as `leftovers()` says.
   */
  abandon(): void {
    this.stopping = true;
    for (const p of [...this.processes, this.sandboxProcess].filter(Boolean)) {
      p.retired = true;
      p.child?.kill('SIGKILL');
    }
  }

  /**
   * Every service's dead-letter queue, read with the admin CLI (`dlq:list`, which leaves the
   * messages parked): what the reconciliation counts as dead letters.
   * @throws AdminCliError when a queue cannot be read
   */
  async deadLetters(): Promise<ParkedMessage[]> {
    const parked: ParkedMessage[] = [];
    for (const service of SERVICES) {
      const listed = await this.cli.run<{ dead_letters: Array<Omit<ParkedMessage, 'service'>> }>(['dlq:list', '--service', service, '--limit', '10000']);
      for (const d of listed.dead_letters) parked.push({ service, event_id: d.event_id, type: d.type, reason: d.reason ?? null, error: d.error ?? null });
    }
    return parked;
  }

  /** Every process's kept output (`ChaosProcess.output`), the sandbox's last. */
  outputs(): { name: string; output: string }[] {
    return [...this.processes, ...(this.sandboxProcess ? [this.sandboxProcess] : [])].map((p) => ({ name: p.name, output: p.output() }));
  }

  /**
   * Stops every process (SIGTERM, then SIGKILL), closes the proxies, and drops the run's schemas and
   * bus namespace. Once: a second call (a signal's teardown and the run's own) answers the first's promise.
   */
  stop(): Promise<void> {
    this.stopped ??= this.stopOnce();
    return this.stopped;
  }

  private async stopOnce(): Promise<void> {
    this.stopping = true;
    for (const p of [...this.processes, this.sandboxProcess].filter(Boolean)) p.retired = true;
    await Promise.all([...this.processes, this.sandboxProcess].filter(Boolean).map((p) => p.kill('SIGTERM', 5000)));
    for (const p of this.processes) {
      await p.db?.stop();
      await p.amqp?.stop();
    }
    await this.booting?.catch(() => undefined);
    await this.world.close();
  }
}

/**
 * What a crash left in the process's output: from the last line that names an error (the head of
 * the stack trace, which says what failed), else the output's tail; 600 characters at most.
 */
export function crashExcerpt(output: string): string {
  const tail = output.slice(-8000);
  const heads = [...tail.matchAll(/^[^\s{].*(?:Error|error|Unhandled|uncaught).*$/gm)];
  const from = heads.length ? heads[heads.length - 1]!.index! : Math.max(0, tail.length - 600);
  return tail.slice(from, from + 600).replace(/\s+/g, ' ');
}
