import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { TestWorld } from './index.js';

/**
 * What one CLI run printed and how it ended. `json` is stdout parsed, read as `T` (the shape the
 * test expects: a result or an `ErrorEnvelope`); `undefined` when stdout is not JSON.
 */
export interface CliRun<T = unknown> {
  code: number | null;
  stdout: string;
  stderr: string;
  json: T;
}

/** Runs `npm run -s cli -- <args>` in the world's environment (-s keeps npm's banner off stdout). */
export async function runCli<T = unknown>(world: TestWorld, args: string[]): Promise<CliRun<T>> {
  const child = spawn('npm', ['run', '-s', 'cli', '--', ...args], { env: { ...process.env, ...world.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json: json as T };
}
