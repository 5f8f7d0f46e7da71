import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * `npm run lint` inside `npm test`, so CI fails on it: ESLint (eslint.config.js: no `any`, no
 * `process.env` outside config classes, app and lib import boundaries) and Prettier's check
 * (.prettierrc.json). `npm run format` rewrites what the second one lists. Each runs in a child
 * process over the whole repository; the failure message is the tool's own report.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const LIMIT_MS = 240_000;

function run(bin: string, args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', bin), ...args], { cwd: ROOT, encoding: 'utf8', timeout: LIMIT_MS, maxBuffer: 64 * 1024 * 1024 });
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}`.trim() };
}

describe('npm run lint', () => {
  it(
    'eslint reports no problem in the repository',
    () => {
      const { status, output } = run('eslint/bin/eslint.js', ['--max-warnings', '0', '.']);
      expect({ status, output }).toEqual({ status: 0, output: '' });
    },
    LIMIT_MS + 10_000,
  );

  it(
    'prettier would reformat no file (run `npm run format`)',
    () => {
      const { status, output } = run('prettier/bin/prettier.cjs', ['--check', '--log-level', 'warn', '.']);
      expect({ status, output }).toEqual({ status: 0, output: '' });
    },
    LIMIT_MS + 10_000,
  );
});
