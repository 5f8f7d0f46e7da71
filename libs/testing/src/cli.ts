import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { TestWorld } from './index.js';

/** What one CLI run printed and how it ended; `json` is stdout parsed, when it is JSON. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

/** Runs `npm run -s cli -- <args>` in the world's environment (-s keeps npm's banner off stdout). */
export async function runCli(world: TestWorld, args: string[]): Promise<CliRun> {
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
  return { code, stdout, stderr, json };
}
