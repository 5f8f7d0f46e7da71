import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { truncateText } from '@touchpoint/text';
import { renderLogLine, tagColor, type LogFormatOptions } from './log-format.js';

/** Lines of each child's output kept to show when it dies. */
const KEPT_LINES = 40;
/** Interval between two readiness probes of one child, ms. */
const READY_POLL_MS = 250;
/** Deadline of one readiness probe, ms. */
const READY_PROBE_TIMEOUT_MS = 2000;

/** One process the supervisor runs. */
export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** URL answering 2xx once the process is ready (its `/health/ready`). */
  readyUrl: string;
}

interface Managed {
  spec: ChildSpec;
  process: ChildProcess;
  color: string;
  lines: string[];
  ready: boolean;
  /** Last readiness answer or error, for the timeout message. */
  lastProbe: string;
  exited?: { code: number | null; signal: NodeJS.Signals | null };
  exitPromise: Promise<void>;
}

/** A child exited on its own (during start-up, or later); carries its last output. */
export class ChildExitedError extends Error {
  constructor(
    readonly child: string,
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly lastLines: string[],
  ) {
    super(`${child} exited ${signal ? `on ${signal}` : `with code ${code}`}`);
    this.name = 'ChildExitedError';
  }
}

/** Some children did not become ready in time. */
export class ReadyTimeoutError extends Error {
  constructor(
    readonly laggards: { name: string; url: string; lastProbe: string }[],
    timeoutMs: number,
  ) {
    super(`not ready after ${Math.round(timeoutMs / 1000)} s: ${laggards.map((l) => `${l.name} (${l.url} → ${l.lastProbe})`).join(', ')}`);
    this.name = 'ReadyTimeoutError';
  }
}

export interface SupervisorOptions {
  /** Where rendered lines go (the terminal). */
  write: (text: string) => void;
  format: Omit<LogFormatOptions, 'tagWidth'>;
  /** Width of the `[name]` tag. */
  tagWidth: number;
  /** Time a child gets between SIGTERM and SIGKILL, ms. */
  stopTimeoutMs: number;
}

/**
 * Runs a set of child processes in the foreground: renders their output with a tag per child,
 * waits until each answers its readiness URL, notices one that dies, and stops them all with
 * SIGTERM then SIGKILL. Children get their own process group, so a terminal's Ctrl-C reaches
 * only the supervisor, which then stops them in order (a second signal mid-shutdown would make a
 * NestJS app exit without closing its connections).
 */
export class Supervisor {
  private readonly children: Managed[] = [];
  private stopping = false;
  private unexpectedExit?: (error: ChildExitedError) => void;

  constructor(private readonly options: SupervisorOptions) {}

  /** Spawns a child and starts rendering its output. */
  start(spec: ChildSpec): void {
    const child = spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const managed: Managed = {
      spec,
      process: child,
      color: tagColor(this.children.length),
      lines: [],
      ready: false,
      lastProbe: 'not answering yet',
      exitPromise: Promise.resolve(),
    };
    managed.exitPromise = new Promise<void>((resolve) => {
      child.once('error', (err) => {
        this.onLine(managed, `failed to spawn: ${err.message}`);
        managed.exited ??= { code: null, signal: null };
        resolve();
      });
      child.once('exit', (code, signal) => {
        managed.exited = { code, signal };
        resolve();
        if (!this.stopping) this.unexpectedExit?.(new ChildExitedError(spec.name, code, signal, managed.lines));
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => this.onLine(managed, line));
    }
    this.children.push(managed);
  }

  /** Called once when a child exits while not being stopped. */
  onUnexpectedExit(listener: (error: ChildExitedError) => void): void {
    this.unexpectedExit = listener;
  }

  /** Process ids of the running children, by name. */
  pids(): Record<string, number> {
    return Object.fromEntries(this.children.filter((c) => c.process.pid && !c.exited).map((c) => [c.spec.name, c.process.pid as number]));
  }

  /**
   * Resolves when every child answers 2xx on its readiness URL.
   * @throws ChildExitedError as soon as a child exits, ReadyTimeoutError after `timeoutMs`
   */
  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const dead = this.children.find((c) => c.exited);
      if (dead) throw new ChildExitedError(dead.spec.name, dead.exited!.code, dead.exited!.signal, dead.lines);
      const waiting = this.children.filter((c) => !c.ready);
      if (waiting.length === 0) return;
      if (Date.now() > deadline) {
        throw new ReadyTimeoutError(
          waiting.map((c) => ({ name: c.spec.name, url: c.spec.readyUrl, lastProbe: c.lastProbe })),
          timeoutMs,
        );
      }
      await Promise.all(waiting.map((c) => this.probe(c)));
      if (this.children.some((c) => !c.ready)) await sleep(READY_POLL_MS);
    }
  }

  /** Stops every child: SIGTERM to all, then SIGKILL to those still running after the timeout. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    const running = this.children.filter((c) => !c.exited);
    for (const c of running) signalGroup(c.process, 'SIGTERM');
    const timer = new Promise<'timeout'>((resolve) => setTimeout(resolve, this.options.stopTimeoutMs, 'timeout').unref());
    const all = Promise.all(running.map((c) => c.exitPromise)).then(() => 'done' as const);
    if ((await Promise.race([all, timer])) === 'timeout') {
      for (const c of running.filter((r) => !r.exited)) {
        this.options.write(`[touchpoint] ${c.spec.name} did not exit within ${this.options.stopTimeoutMs} ms of SIGTERM; sending SIGKILL\n`);
        signalGroup(c.process, 'SIGKILL');
      }
      await all;
    }
  }

  private async probe(c: Managed): Promise<void> {
    try {
      const response = await fetch(c.spec.readyUrl, { signal: AbortSignal.timeout(READY_PROBE_TIMEOUT_MS) });
      c.ready = response.ok;
      c.lastProbe = `HTTP ${response.status}${response.ok ? '' : ` ${truncateText(await response.text(), 200)}`}`;
      if (!response.ok) return;
      await response.body?.cancel().catch(() => undefined);
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      c.lastProbe = cause?.code ?? (err as Error).message;
    }
  }

  private onLine(c: Managed, line: string): void {
    c.lines.push(line);
    if (c.lines.length > KEPT_LINES) c.lines.shift();
    const rendered = renderLogLine(c.spec.name, c.color, line, { ...this.options.format, tagWidth: this.options.tagWidth });
    if (rendered !== undefined) this.options.write(`${rendered}\n`);
  }
}

/** Signals the child's whole process group (it leads one: `detached`), falling back to the pid. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (!child.pid) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
