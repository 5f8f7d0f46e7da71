import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const LIMIT_MS = 240_000;

/**
 * The console's API client cannot drift from the gateway (issue 20): the committed OpenAPI document
 * and the types generated from it equal what the gateway's routes produce now, and the console
 * type-checks against those types (a route or field the console uses and the gateway dropped fails here).
 */
describe('console API client', () => {
  it(
    'is generated from the current gateway routes (else run `npm run console:client`)',
    async () => {
      const result = await run(process.execPath, ['--import', '@swc-node/register/esm-register', 'scripts/console/generate-client.ts', '--check'], { cwd: ROOT }).then(
        (ok) => ({ code: 0, stderr: ok.stderr.trim() }),
        (err: { code?: number; stderr?: string }) => ({ code: err.code ?? 1, stderr: (err.stderr ?? '').trim() }),
      );
      expect(result).toEqual({ code: 0, stderr: 'console:client: the console client matches the gateway' });
    },
    LIMIT_MS,
  );

  it(
    'type-checks the console against the generated types',
    async () => {
      const output = await run(process.execPath, [TSC, '-p', 'apps/console/tsconfig.json'], { cwd: ROOT }).then(
        () => '',
        (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}` || 'tsc failed',
      );
      expect(output).toBe('');
    },
    LIMIT_MS,
  );
});
