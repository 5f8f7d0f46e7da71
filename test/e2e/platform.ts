import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestWorld, eventually, freePort, TcpProxy, TEST_AMQP_URL, type TestWorld } from '@touchpoint/testing';
import { type AdminCli, compiledAdminCli } from '../../scripts/start/admin-cli.js';
import { portVariable, STARTED_PROCESSES, type StartedProcess } from '../../scripts/start/start.config.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** An organization with an all-scopes API key, made with the admin CLI as an operator would. */
export interface Tenant {
  organizationId: string;
  memberId: string;
  apiKeyId: string;
  secret: string;
}

/** A child process the suite runs itself (the followups service: the one it kills). */
class OwnProcess {
  child?: ChildProcess;
  output = '';

  constructor(
    private readonly script: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  start(): void {
    this.child = spawn(process.execPath, ['--enable-source-maps', '--import', path.join(ROOT, 'scripts/start/child-guard.mjs'), this.script], { cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  /** Sends `signal`; a process still alive after `graceMs` gets SIGKILL. */
  async stop(signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * The whole platform as `npm start -- --no-demo` runs it (the orchestrator itself, from the
 * compiled build it makes), in a test world of its own (schema prefix, bus namespace, free ports),
 * with two differences a black-box suite needs: every service reaches RabbitMQ through a TCP proxy
 * the suite can cut, and the followups service runs beside the orchestrator (same build, same
 * environment) so the suite can SIGKILL and restart it (the orchestrator stops everything when one
 * of its children dies, as it should).
 */
export class Platform {
  readonly ports = {} as Record<StartedProcess, number>;
  env: NodeJS.ProcessEnv = {};
  cli!: AdminCli;
  private orchestrator?: ChildProcess;
  private orchestratorOutput = '';
  private followups?: OwnProcess;
  private stateDir = '';

  private constructor(
    readonly world: TestWorld,
    readonly broker: TcpProxy,
  ) {}

  static async start(label: string, extraEnv: Record<string, string> = {}): Promise<Platform> {
    const world = await createTestWorld(label);
    const amqp = new URL(TEST_AMQP_URL);
    const broker = new TcpProxy(amqp.hostname, Number(amqp.port || 5672));
    const brokerPort = await broker.start();
    amqp.host = `127.0.0.1:${brokerPort}`;
    const platform = new Platform(world, broker);
    for (const name of STARTED_PROCESSES) platform.ports[name] = await freePort();
    platform.stateDir = await mkdtemp(path.join(tmpdir(), 'tp-e2e-'));
    const { PORT: _port, ...worldEnv } = world.env;
    platform.env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...worldEnv,
      AMQP_URL: amqp.toString(),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      TOUCHPOINT_STATE_DIR: platform.stateDir,
      START_TIMEOUT_MS: '150000',
      NO_COLOR: '1',
      // Eight processes share the machine's PostgreSQL with every other test file: smaller pools
      // (followups keeps the default below: after a SIGKILL its recovery work would starve the
      // readiness probe's `SELECT 1` in a pool this small).
      DB_POOL_SIZE: '4',
      ...Object.fromEntries(STARTED_PROCESSES.map((name) => [portVariable(name), String(platform.ports[name])])),
      ...extraEnv,
    };
    platform.cli = compiledAdminCli(ROOT, platform.env);
    // The orchestrator gives the same to its children (scripts/start/main.ts childEnv).
    platform.followups = new OwnProcess(path.join(ROOT, 'dist/apps/followups/src/main.js'), { ...platform.env, PORT: String(platform.ports.followups), DB_POOL_SIZE: '10' });
    try {
      await platform.startOrchestrator();
      await platform.startFollowups();
    } catch (err) {
      // Nothing may outlive a failed start: the caller never gets a handle to stop it.
      await platform.stop().catch(() => undefined);
      throw err;
    }
    return platform;
  }

  private async startOrchestrator(): Promise<void> {
    const only = STARTED_PROCESSES.filter((n) => n !== 'followups').join(',');
    const child = spawn(process.execPath, ['scripts/start.mjs', '--no-demo', '--only', only], { cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.orchestrator = child;
    child.stdout!.on('data', (d: Buffer) => (this.orchestratorOutput += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.orchestratorOutput += d.toString()));
    try {
      await eventually(() => this.orchestratorOutput.includes('Ctrl-C stops everything.') || child.exitCode !== null, 170_000, 200);
    } catch {
      throw new Error(`npm start did not get ready:\n${this.orchestratorOutput.slice(-3000)}`);
    }
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${this.orchestratorOutput.slice(-3000)}`);
  }

  /** What the orchestrator printed so far. */
  get output(): string {
    return this.orchestratorOutput;
  }

  url(name: StartedProcess): string {
    return `http://127.0.0.1:${this.ports[name]}`;
  }

  /** Starts (or restarts) the followups service and waits until it is ready. */
  async startFollowups(): Promise<void> {
    this.followups!.start();
    try {
      await eventually(async () => (await fetch(`${this.url('followups')}/health/ready`).catch(() => undefined))?.status === 200, 90_000, 200);
    } catch {
      const ready = await fetch(`${this.url('followups')}/health/ready`)
        .then((r) => r.text())
        .catch((e: Error) => e.message);
      throw new Error(`followups did not get ready (${ready}):\n${this.followups!.output.slice(-3000)}`);
    }
  }

  /** Kills the followups service with `signal` (SIGKILL: no shutdown hook runs). */
  async killFollowups(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await this.followups!.stop(signal);
  }

  /** An organization, an admin member and an all-scopes key, through the admin CLI. */
  async tenant(name: string): Promise<Tenant> {
    const org = await this.cli.run<{ id: string }>(['org:create', '--name', name]);
    const member = await this.cli.run<{ id: string }>(['member:add', '--org', org.id, '--email', `admin@${org.id.slice(0, 8)}.test`, '--role', 'admin', '--name', 'Admin']);
    const { API_SCOPES } = await import('@touchpoint/contracts');
    const key = await this.cli.run<{ id: string; secret: string }>(['apikey:create', '--org', org.id, '--member', member.id, '--scopes', API_SCOPES.join(','), '--name', 'e2e']);
    return { organizationId: org.id, memberId: member.id, apiKeyId: key.id, secret: key.secret };
  }

  async stop(): Promise<void> {
    await this.followups?.stop('SIGTERM');
    const child = this.orchestrator;
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      // The orchestrator gives its children STOP_TIMEOUT_MS (10 s) before SIGKILL; past that, end it too.
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    await this.broker.stop();
    await rm(this.stateDir, { recursive: true, force: true });
    await this.world.close();
  }
}
