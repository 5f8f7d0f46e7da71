import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { truncateText } from '@touchpoint/text';

/** The admin CLI failed: exit code, its error envelope when it printed one, and its stderr tail. */
export class AdminCliError extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly code: string | undefined,
    detail: string,
  ) {
    super(`admin CLI \`${command}\` failed${code ? ` (${code})` : ''}: ${detail}`);
    this.name = 'AdminCliError';
  }
}

/** Runs the admin CLI's commands with `--json` (contract: one JSON object on stdout). */
export interface AdminCli {
  run<T>(args: string[]): Promise<T>;
}

/** Stderr lines kept for an error message. */
const STDERR_TAIL_LINES = 5;

/** True when package.json defines the `cli` script (the admin CLI app is present). */
export function hasAdminCli(root: string): boolean {
  try {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    return typeof pkg.scripts?.cli === 'string';
  } catch {
    return false;
  }
}

/**
 * The CLI as `npm run --silent cli -- <args> --json` in `root` with `env` (so it reaches the same
 * database and broker as the services). Its stderr (logs) is passed to `onLog` line by line.
 * @throws AdminCliError on a non-zero exit or output that is not one JSON object
 */
export function npmAdminCli(root: string, env: NodeJS.ProcessEnv, onLog: (line: string) => void = () => undefined): AdminCli {
  return spawnedCli('npm', ['run', '--silent', 'cli', '--'], root, env, onLog);
}

/**
 * The same CLI run from the compiled tree (`node dist/apps/cli/src/main.js`): one second per
 * command instead of three, since the TypeScript compiler is not loaded.
 */
export function compiledAdminCli(root: string, env: NodeJS.ProcessEnv, onLog: (line: string) => void = () => undefined): AdminCli {
  return spawnedCli(process.execPath, ['--enable-source-maps', path.join(root, COMPILED_CLI)], root, env, onLog);
}

/** Where scripts/build.mjs puts the CLI's entry point. */
export const COMPILED_CLI = 'dist/apps/cli/src/main.js';

function spawnedCli(command: string, prefix: string[], root: string, env: NodeJS.ProcessEnv, onLog: (line: string) => void): AdminCli {
  return {
    run<T>(args: string[]): Promise<T> {
      const shown = [...args, '--json'].join(' ');
      return new Promise<T>((resolve, reject) => {
        const child = spawn(command, [...prefix, ...args, '--json'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        const stderr: string[] = [];
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
        let partial = '';
        child.stderr.on('data', (chunk: Buffer) => {
          const lines = (partial + chunk.toString('utf8')).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) {
            stderr.push(line);
            onLog(line);
          }
        });
        child.once('error', (err) => reject(new AdminCliError(shown, null, undefined, err.message)));
        child.once('close', (exitCode) => {
          if (partial) stderr.push(partial);
          const body = lastJsonObject(stdout);
          const tail = stderr.filter(Boolean).slice(-STDERR_TAIL_LINES).join(' | ');
          if (exitCode === 0 && body && !('error' in body)) return resolve(body as T);
          const envelope = body?.error as { code?: string; message?: string } | undefined;
          reject(new AdminCliError(shown, exitCode, envelope?.code, envelope?.message ?? (tail || `exit code ${exitCode}, output: ${truncateText(stdout.trim(), 300)}`)));
        });
      });
    },
  };
}

/** The last line of `text` that parses as a JSON object (npm may print notices before it). */
function lastJsonObject(text: string): Record<string, unknown> | undefined {
  const lines = text.trim().split('\n').reverse();
  for (const line of lines) {
    if (!line.trim().startsWith('{')) continue;
    try {
      const value: unknown = JSON.parse(line);
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // Not JSON: keep looking.
    }
  }
  // A pretty-printed object spans several lines.
  try {
    const value: unknown = JSON.parse(text.trim());
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
