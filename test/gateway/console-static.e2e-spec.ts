import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestWorld, eventually, freePort, type TestWorld } from '@touchpoint/testing';

const ROOT = path.resolve(import.meta.dirname, '../..');
const INDEX_HTML = '<!doctype html><html><head><script type="module" src="/console/assets/index-4f3a2b1c.js"></script></head><body><div id="root"></div></body></html>';

/**
 * The gateway serves the console's build at /console (issue 20). Jest cannot load
 * @fastify/static, so this runs a real gateway process (from the TypeScript sources, as `npm run
 * svc` does) on a temporary CONSOLE_DIR holding a fake build.
 */
describe('Console static files', () => {
  let world: TestWorld;
  let dir: string;
  let child: ChildProcess | undefined;
  let output = '';
  let base: string;

  beforeAll(async () => {
    world = await createTestWorld('console_static');
    dir = await mkdtemp(path.join(tmpdir(), 'tp-console-'));
    await mkdir(path.join(dir, 'assets'));
    await writeFile(path.join(dir, 'index.html'), INDEX_HTML);
    await writeFile(path.join(dir, 'assets', 'index-4f3a2b1c.js'), 'console.info("console");\n');
    await writeFile(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...world.env, PORT: String(port), LOG_LEVEL: 'warn', DB_POOL_SIZE: '2', CONSOLE_DIR: dir };
    child = spawn(process.execPath, ['--import', '@swc-node/register/esm-register', 'apps/gateway/src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(
      async () => {
        if (child!.exitCode !== null) throw new Error(`the gateway exited: ${output}`);
        return (await fetch(`${base}/health/ready`).catch(() => undefined))?.status === 200;
      },
      90_000,
      250,
    );
  }, 120_000);
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
    await world.close();
  });

  it.each(['/console', '/console/'])('serves index.html at %s, revalidated on every load, under a CSP of our own origin only', async (route) => {
    const res = await fetch(`${base}${route}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(await res.text()).toBe(INDEX_HTML);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https:/);
  });

  it.each(['/console/review', '/console/enrollments/0b6f2c1e-4d3a-4e5b-9c8d-7a6f5e4d3c2b', '/console/operations/ambiguous?tab=open'])('answers index.html for the app route %s (SPA fallback)', async (route) => {
    const res = await fetch(`${base}${route}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(INDEX_HTML);
    expect(res.headers.get('cache-control')).toBe('no-cache');
  });

  it('serves a hashed asset with a year-long immutable cache, and another file of the build revalidated', async () => {
    const asset = await fetch(`${base}/console/assets/index-4f3a2b1c.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('javascript');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await asset.text()).toContain('console.info');
    const icon = await fetch(`${base}/console/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('cache-control')).toBe('no-cache');
  });

  it('answers 404 with the envelope for a missing file (a path with an extension), not index.html', async () => {
    const res = await fetch(`${base}/console/assets/missing-123.js`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('does not serve files outside the build directory', async () => {
    const res = await fetch(`${base}/console/..%2f..%2fpackage.json`);
    expect(res.status).not.toBe(200);
  });

  it('keeps the API and its docs where they were', async () => {
    expect((await fetch(`${base}/me`)).status).toBe(401);
    expect((await fetch(`${base}/docs/json`)).status).toBe(200);
  });
});
