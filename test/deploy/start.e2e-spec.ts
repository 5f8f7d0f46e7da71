import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually, createTestWorld, freePort, type TestWorld } from '@touchpoint/testing';
import { portVariable, STARTED_PROCESSES } from '../../scripts/start/start.config.js';

/**
 * `npm start` as a user runs it: the real orchestrator, the real services from
 * the compiled build, the real admin CLI, in this file's own schema prefix and bus namespace, on
 * free ports.
 */

interface Run {
  child: ChildProcess;
  output: () => string;
  exit: Promise<number | null>;
}

/** Runs the orchestrator; `entry` is scripts/start.mjs (build + compiled) or the TypeScript source. */
function runStart(args: string[], env: NodeJS.ProcessEnv, entry: 'built' | 'source' = 'built'): Run {
  const command = entry === 'built' ? ['scripts/start.mjs'] : ['--import', '@swc-node/register/esm-register', 'scripts/start/main.ts'];
  const child = spawn(process.execPath, [...command, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => text, exit };
}

async function status(url: string): Promise<number | string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(3000) });
    await response.body?.cancel();
    return response.status;
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
  }
}

describe('npm start', () => {
  describe('when a dependency does not answer', () => {
    it.each([
      ['PostgreSQL', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/touchpoint' }, /PostgreSQL is not reachable at 127\.0\.0\.1:1 \(.*ECONNREFUSED.*\)/, /pg_ctlcluster --skip-systemctl-redirect \S+ main start/],
      ['RabbitMQ', { AMQP_URL: 'amqp://guest:guest@127.0.0.1:2' }, /RabbitMQ is not reachable at 127\.0\.0\.1:2 \(.*ECONNREFUSED.*\)/, /rabbitmq-server -detached/],
    ])('exits non-zero with one line naming %s, the address tried and how to start it', async (_name, env, what, how) => {
      const run = runStart([], env, 'source');

      expect(await run.exit).toBe(1);
      const lines = run.output().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(what);
      expect(lines[0]).toContain('docker compose -f deploy/docker-compose.yml up -d postgres rabbitmq');
      expect(lines[0]).toMatch(how);
    });

    it('names both in the one line when neither answers', async () => {
      const run = runStart([], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/touchpoint', AMQP_URL: 'amqp://127.0.0.1:2' }, 'source');

      expect(await run.exit).toBe(1);
      const lines = run.output().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/PostgreSQL is not reachable at 127\.0\.0\.1:1 .* and RabbitMQ is not reachable at 127\.0\.0\.1:2 /);
      expect(lines[0]).toContain('DATABASE_URL / AMQP_URL');
    });

    it('refuses an unknown option with exit code 2', async () => {
      const run = runStart(['--frobnicate'], {}, 'source');
      expect(await run.exit).toBe(2);
      expect(run.output()).toContain('unknown option --frobnicate');
    });
  });

  describe('with PostgreSQL and RabbitMQ up', () => {
    let world: TestWorld;
    let stateDir: string;
    let env: NodeJS.ProcessEnv;
    let ports: Record<string, number>;
    let running: Run | undefined;

    beforeAll(async () => {
      world = await createTestWorld('npmstart');
      stateDir = await mkdtemp(path.join(tmpdir(), 'tp-start-'));
      ports = {};
      for (const name of STARTED_PROCESSES) ports[name] = await freePort();
      env = {
        ...world.env,
        LOG_LEVEL: 'warn',
        TOUCHPOINT_STATE_DIR: stateDir,
        START_TIMEOUT_MS: '150000',
        ...Object.fromEntries(STARTED_PROCESSES.map((name) => [portVariable(name), String(ports[name])])),
      };
    });
    afterEach(async () => {
      // A failed assertion must not leave the platform running.
      if (running && running.child.exitCode === null) {
        running.child.kill('SIGINT');
        await running.exit;
      }
      running = undefined;
    });
    afterAll(async () => {
      await rm(stateDir, { recursive: true, force: true });
      await world.close();
    });

    const gateway = () => `http://127.0.0.1:${ports.gateway}`;
    const started = (run: Run) => eventually(() => run.output().includes('Ctrl-C stops everything.') || run.child.exitCode !== null, 170_000, 200);
    const demoState = async () => JSON.parse(await readFile(path.join(stateDir, 'demo.json'), 'utf8')).demos as Record<string, { organization_id: string; secret: string }>;

    it('starts every process, makes a demo organization and key once, prints how to call the API, and stops on Ctrl-C', async () => {
      running = runStart([], env);
      await started(running);
      const output = running.output();
      expect(running.child.exitCode).toBeNull();

      for (const name of STARTED_PROCESSES) expect({ name, ready: await status(`http://127.0.0.1:${ports[name]}/health/ready`) }).toEqual({ name, ready: 200 });
      const demos = Object.values(await demoState());
      expect(demos).toHaveLength(1);
      const [{ organization_id: organizationId, secret }] = demos;
      expect(output).toContain(`gateway        ${gateway()}`);
      expect(output).toContain(`API docs       ${gateway()}/docs`);
      expect(output).toContain(`organization   ${organizationId}`);
      expect(output).toContain(`API key        ${secret}`);
      expect(output).toContain(`curl -H "Authorization: Bearer ${secret}" ${gateway()}/me`);
      // The operator console, and which key signs in to it: the demo admin's, printed just above.
      expect(output).toContain(`console        ${gateway()}/console/   (sign in with the API key above, the demo admin's (admin@demo.touchpoint.test))`);
      expect(await status(`${gateway()}/console/`)).toBe(200);
      expect(await status(`${gateway()}/docs`)).toBe(200);
      const me = await fetch(`${gateway()}/me`, { headers: { authorization: `Bearer ${secret}` } });
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ organization_id: organizationId, scopes: expect.arrayContaining(['admin', 'messaging:write', 'agents:write']) });

      running.child.kill('SIGINT');
      expect(await running.exit).toBe(0);
      expect(running.output()).toContain('[touchpoint] stopped');
      for (const name of STARTED_PROCESSES) expect({ name, after: await status(`http://127.0.0.1:${ports[name]}/health/live`) }).toEqual({ name, after: 'ECONNREFUSED' });
    }, 200_000);

    it('reuses the remembered demo organization on the next start instead of creating another', async () => {
      const [before] = Object.values(await demoState());

      running = runStart(['--only', 'gateway'], env);
      await started(running);

      expect(running.output()).toContain('using the demo organization saved in');
      expect(running.output()).toContain(`organization   ${before.organization_id}`);
      const organizations = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${world.schema('gateway')}".organizations`);
      expect(organizations[0].n).toBe(1);
      running.child.kill('SIGTERM');
      expect(await running.exit).toBe(0);
    }, 200_000);

    it('stops everything when the process that ran it dies without passing a signal on (npm on SIGTERM)', async () => {
      // A stand-in for npm: starts the orchestrator, then is killed outright (no signal reaches its child).
      const wrapperCode = `const { spawn } = require('node:child_process'); const c = spawn(process.execPath, ['scripts/start.mjs', '--only', 'gateway', '--no-demo'], { stdio: 'inherit' }); console.log('orchestrator pid ' + c.pid); setInterval(() => {}, 1e6);`;
      const wrapper = spawn(process.execPath, ['-e', wrapperCode], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      wrapper.stdout!.on('data', (d: Buffer) => (text += d.toString()));
      wrapper.stderr!.on('data', (d: Buffer) => (text += d.toString()));
      try {
        await eventually(() => text.includes('Ctrl-C stops everything.'), 170_000, 200);
        expect(await status(`${gateway()}/health/live`)).toBe(200);
        wrapper.kill('SIGKILL');
        await eventually(() => text.includes('[touchpoint] stopped'), 30_000, 200);
        expect(text).toContain('the process that ran npm start is gone');
        expect(await status(`${gateway()}/health/live`)).toBe('ECONNREFUSED');
      } finally {
        if (wrapper.exitCode === null) wrapper.kill('SIGKILL');
        // Should this ever fail, the orchestrator would outlive the test holding its ports: stop it.
        const orchestrator = Number(/orchestrator pid (\d+)/.exec(text)?.[1]);
        if (orchestrator) {
          try {
            process.kill(orchestrator, 'SIGTERM');
          } catch {
            // Already gone, as it should be.
          }
        }
      }
    }, 200_000);

    it('accepts --no-demo: no demo key is printed', async () => {
      running = runStart(['--only', 'gateway', '--no-demo'], env);
      await started(running);

      expect(running.output()).toContain(`gateway        ${gateway()}`);
      expect(running.output()).not.toContain('API key');
      expect(running.output()).toContain(`console        ${gateway()}/console/   (sign in with a member's own key (admin CLI: apikey:create))`);
      running.child.kill('SIGINT');
      expect(await running.exit).toBe(0);
    }, 200_000);

    it('stops everything and exits non-zero with the last lines of a process that dies during start-up', async () => {
      // A value the gateway's config class rejects: the gateway exits at once, the sandbox is fine.
      running = runStart(['--only', 'gateway,sandbox', '--no-demo'], { ...env, LOG_LEVEL: 'info', BODY_LIMIT_BYTES: '1' });

      expect(await running.exit).toBe(1);
      expect(running.output()).toMatch(/gateway exited with code 1 during start-up; its last lines:\n(.*\n)*.*BODY_LIMIT_BYTES/);
      expect(await status(`http://127.0.0.1:${ports.sandbox}/health/live`)).toBe('ECONNREFUSED');
    }, 200_000);
  });
});
