import { spawn } from 'node:child_process';
import path from 'node:path';
import { eventually, freePort } from '@touchpoint/testing';
import { ChildExitedError, ReadyTimeoutError, Supervisor, type ChildSpec } from '../../scripts/start/supervisor.js';

/** A port nothing listens on right now. */
/** Is a process with this pid still there? */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A stand-in service: answers /health/ready on `port` after `readyAfterMs`, prints a JSON log line,
 * and reacts to SIGTERM as told (`exit` or `ignore`).
 */
function fakeService(name: string, port: number, behaviour: { readyAfterMs?: number; onSigterm?: 'exit' | 'ignore'; exitAfterMs?: number }): ChildSpec {
  const code = `
    const http = require('node:http');
    console.log(JSON.stringify({ level: 'info', time: new Date().toISOString(), msg: '${name} booting', event: 'service.starting' }));
    ${behaviour.onSigterm === 'ignore' ? "process.on('SIGTERM', () => console.log('ignoring SIGTERM'));" : "process.on('SIGTERM', () => { console.log('bye'); process.exit(0); });"}
    ${behaviour.exitAfterMs !== undefined ? `setTimeout(() => { console.error('fatal: cannot go on'); process.exit(3); }, ${behaviour.exitAfterMs});` : ''}
    setTimeout(() => http.createServer((q, r) => r.end('{"status":"ok"}')).listen(${port}, '127.0.0.1'), ${behaviour.readyAfterMs ?? 0});
  `;
  return { name, command: process.execPath, args: ['-e', code], env: { PATH: process.env.PATH }, cwd: process.cwd(), readyUrl: `http://127.0.0.1:${port}/health/ready` };
}

describe(Supervisor.name, () => {
  let output: string[];
  let sut: Supervisor;

  beforeEach(() => {
    output = [];
    sut = new Supervisor({ write: (t) => output.push(t), format: { color: false, verbose: false }, tagWidth: 6, stopTimeoutMs: 1500 });
  });
  afterEach(() => sut.stopAll());

  describe('waitReady', () => {
    it('resolves once every child answers its readiness URL, and shows their tagged output', async () => {
      sut.start(fakeService('alpha', await freePort(), { readyAfterMs: 300 }));
      sut.start(fakeService('beta', await freePort(), { readyAfterMs: 600 }));

      await sut.waitReady(10_000);

      const text = output.join('');
      expect(text).toMatch(/INFO {2}\[alpha \] alpha booting {2}event=service.starting/);
      expect(text).toMatch(/\[beta {2}\] beta booting/);
    });

    it('fails with the last lines of a child that exits during start-up', async () => {
      sut.start(fakeService('alpha', await freePort(), { readyAfterMs: 60_000 }));
      sut.start(fakeService('crashy', await freePort(), { readyAfterMs: 60_000, exitAfterMs: 200 }));

      const error = await sut.waitReady(10_000).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(ChildExitedError);
      expect(error).toMatchObject({ child: 'crashy', code: 3 });
      expect((error as ChildExitedError).lastLines).toEqual([expect.stringContaining('crashy booting'), 'fatal: cannot go on']);
    });

    it('names the children that are not ready when the time is up', async () => {
      const port = await freePort();
      sut.start(fakeService('ready', await freePort(), {}));
      sut.start(fakeService('laggard', port, { readyAfterMs: 60_000 }));

      const error = await sut.waitReady(1500).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(ReadyTimeoutError);
      expect((error as ReadyTimeoutError).laggards).toEqual([{ name: 'laggard', url: `http://127.0.0.1:${port}/health/ready`, lastProbe: 'ECONNREFUSED' }]);
      expect((error as Error).message).toContain('laggard');
    });
  });

  describe('stopAll', () => {
    it('stops children with SIGTERM, and SIGKILLs one that ignores it after the timeout', async () => {
      sut.start(fakeService('polite', await freePort(), {}));
      sut.start(fakeService('stubborn', await freePort(), { onSigterm: 'ignore' }));
      await sut.waitReady(10_000);
      const pids = sut.pids();

      const started = Date.now();
      await sut.stopAll();

      expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
      expect([alive(pids.polite), alive(pids.stubborn)]).toEqual([false, false]);
      const text = output.join('');
      expect(text).toContain('[polite] bye');
      expect(text).toContain('[stubborn] ignoring SIGTERM');
      expect(text).toContain('stubborn did not exit within 1500 ms of SIGTERM; sending SIGKILL');
    });
  });

  describe('onUnexpectedExit', () => {
    it('reports a child that dies after start-up, with its last lines', async () => {
      const reported: ChildExitedError[] = [];
      sut.onUnexpectedExit((e) => reported.push(e));
      sut.start(fakeService('fragile', await freePort(), { exitAfterMs: 1500 }));
      await sut.waitReady(10_000);

      await eventually(() => reported.length === 1, 5000);

      expect(reported[0]).toMatchObject({ child: 'fragile', code: 3 });
      expect(reported[0].lastLines.at(-1)).toBe('fatal: cannot go on');
    });
  });
});

describe('child-guard', () => {
  it('stops a child whose parent was SIGKILLed (no orphan keeps its port)', async () => {
    // A parent that spawns a guarded, detached child, prints its pid, then waits to be killed.
    const guard = path.resolve('scripts/start/child-guard.mjs');
    const parentCode = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['--import', ${JSON.stringify(guard)}, '-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
      console.log(child.pid);
      setInterval(() => {}, 1000);
    `;
    const parent = spawn(process.execPath, ['-e', parentCode], { stdio: ['ignore', 'pipe', 'inherit'] });
    const childPid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(d.toString()))));
    await new Promise((r) => setTimeout(r, 300));
    expect(alive(childPid)).toBe(true);

    parent.kill('SIGKILL');

    await eventually(() => !alive(childPid), 5000);
  });
});
