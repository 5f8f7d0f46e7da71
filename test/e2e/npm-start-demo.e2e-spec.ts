import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestWorld, eventually, freePort, type TestWorld } from '@touchpoint/testing';
import { portVariable, STARTED_PROCESSES } from '../../scripts/start/start.config.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Run {
  child: ChildProcess;
  output: () => string;
  exit: Promise<number | null>;
}

/**
 * `npm start` runs the demo once per demo organization, after every process is ready, and keeps
 * serving; the next start says it already ran.
 */
describe('npm start and the demo', () => {
  let world: TestWorld;
  let stateDir: string;
  let env: NodeJS.ProcessEnv;
  let running: Run | undefined;

  function start(args: string[]): Run {
    const child = spawn(process.execPath, ['scripts/start.mjs', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
    running = { child, output: () => text, exit: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
    return running;
  }

  beforeAll(async () => {
    world = await createTestWorld('e2e_npm_start_demo');
    stateDir = await mkdtemp(path.join(tmpdir(), 'tp-demo-'));
    const ports: Record<string, string> = {};
    for (const name of STARTED_PROCESSES) ports[portVariable(name)] = String(await freePort());
    const { PORT: _port, ...worldEnv } = world.env;
    env = { PATH: process.env.PATH, HOME: process.env.HOME, ...worldEnv, LOG_LEVEL: 'warn', NO_COLOR: '1', DB_POOL_SIZE: '3', TOUCHPOINT_STATE_DIR: stateDir, START_TIMEOUT_MS: '150000', ...ports };
  });
  afterEach(async () => {
    if (running && running.child.exitCode === null) {
      running.child.kill('SIGINT');
      await running.exit;
    }
  });
  afterAll(async () => {
    await rm(stateDir, { recursive: true, force: true });
    await world.close();
  });

  it('prints the whole transcript without a failed scenario once every process is ready, and keeps serving', async () => {
    const run = start([]);
    await eventually(() => /the demo (finished|could not run)/.test(run.output()) || run.child.exitCode !== null, 280_000, 250);
    const output = run.output();
    expect(run.child.exitCode).toBeNull();
    expect(output.indexOf('Ctrl-C stops everything.')).toBeLessThan(output.indexOf('running the demo once'));
    expect(output).not.toContain('FAILED');
    expect(output).toContain('the demo finished; look the ids up at');
    // The demo leaves one draft pending and says where to approve it.
    expect(output).toMatch(/\[demo\] outreach +draft [0-9a-f-]{36} for \S+ is pending in the review queue/);
    expect(output).toMatch(/operator console: http:\/\/127\.0\.0\.1:\d+\/console\/, sign in with the demo admin's API key .*; draft [0-9a-f-]{36} waits for your approval/);
    for (const line of ['"Retomada em 4 horas" created', 'sent → delivered → read', 'completed (exhausted)', 'completed (replied); follow-up effect', 'denied by the rate limit', '[demo] outreach']) expect(output).toContain(line);
    const { demos } = JSON.parse(await readFile(path.join(stateDir, 'demo.json'), 'utf8')) as { demos: Record<string, { organization_id: string }> };
    const [{ organization_id: organizationId }] = Object.values(demos);
    const runs = JSON.parse(await readFile(path.join(stateDir, 'demo-runs.json'), 'utf8'));
    expect(runs[organizationId]).toMatchObject({ failures: 0 });
    run.child.kill('SIGINT');
    expect(await run.exit).toBe(0);
  }, 300_000);

  it('does not run it again for the same organization, and teaches the new sandbox the demo sender and mailbox again', async () => {
    const run = start(['--only', 'gateway,sandbox,outbox-dispatcher']);
    await eventually(() => /the sandbox knows the demo's providers again|could not teach the sandbox/.test(run.output()) || run.child.exitCode !== null, 170_000, 250);
    expect(run.output()).toContain('the demo already ran for this organization (npm run demo runs it again)');
    expect(run.output()).not.toContain('[demo]');
    // The sandbox starts empty: without this the demo's connected sender and mailbox would fail every send.
    expect(run.output()).toMatch(/the sandbox knows the demo's providers again: WhatsApp number \d+, Nylas grant demo-grant-[0-9a-f-]{36}/);
    const { demos } = JSON.parse(await readFile(path.join(stateDir, 'demo.json'), 'utf8')) as { demos: Record<string, { organization_id: string }> };
    const [{ organization_id: organizationId }] = Object.values(demos);
    const grant = await fetch(`http://127.0.0.1:${env[portVariable('sandbox')]}/v3/grants/demo-grant-${organizationId}`, { headers: { authorization: 'Bearer sandbox-nylas-api-key' } });
    expect(grant.status).toBe(200);
    run.child.kill('SIGINT');
    expect(await run.exit).toBe(0);
  }, 200_000);

  it('--no-demo neither prepares the organization nor runs the demo', async () => {
    const run = start(['--only', 'gateway,sandbox', '--no-demo']);
    await eventually(() => run.output().includes('Ctrl-C stops everything.') || run.child.exitCode !== null, 170_000, 250);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(run.output()).not.toContain('demo');
    run.child.kill('SIGINT');
    expect(await run.exit).toBe(0);
  }, 200_000);
});
