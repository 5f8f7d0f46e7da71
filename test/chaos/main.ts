/**
 * `npm run chaos` (issue 17): the whole platform with replicas, a seeded workload through the
 * public API while faults are injected, then a bounded drain and the reconciliation's table.
 *
 * Options: `--duration <s>` (workload and faults, default 600), `--seed <n>` (default: drawn and
 * printed), `--replicas <n>` (processes of each replicated service: followups, outreach, messaging,
 * outbox-dispatcher; default 2), `--fault-rate <per min>` (every kind, default 0.8), `--rate
 * <kind>=<per min>` (one kind, repeatable; 0 turns it off), `--drain <s>` (default 180, at least
 * the platform's documented recovery bound, `RECOVERY_BOUND_MS`: 120),
 * `--verbose` (one line per fault); bounds in `OPTION_LIMITS`. Environment: `CHAOS_LOG_LEVEL` (the
 * services' LOG_LEVEL, default warn) and `CHAOS_LOG_DIR` (a folder that gets everything each process
 * printed, `<process>.log`, beside the 200-line tails the run always keeps). It builds `dist/` first and runs the
 * compiled services.
 *
 * Exit codes: 0 when the run has no violation, 1 when it has one (or a process crashed or did not
 * come back), 2 on bad options.
 */
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_FAULT_RATES, FAULT_KINDS, FaultInjector, type FaultRates } from './faults.js';
import { ChaosPlatform, DEFAULT_REPLICAS, RECOVERY_BOUND_MS } from './platform.js';
import { reconcile, formatReport } from './reconcile.js';
import { interruptHandler, Teardown } from './interrupt.js';
import { createRng, forkRng } from './rng.js';
import type { ChaosReport, FaultKind } from './types.js';
import { planWorkload, runWorkload, scheduleFingerprint } from './workload.js';

/** What one run is asked to do. */
export interface ChaosOptions {
  seed: number;
  /** Workload and faults, ms. */
  durationMs: number;
  /** Processes of each replicated service. */
  replicas: number;
  /** Faults per minute, by kind. */
  rates: FaultRates;
  /** Longest wait for the platform to settle after the faults stop, ms. */
  drainTimeoutMs: number;
  /** Extra environment for every service (e.g. shorter sweeps in the short test run). */
  env?: Record<string, string>;
  label?: string;
  log?: (line: string) => void;
  /** One line per fault. */
  verbose?: boolean;
  /** Gets the platform as soon as it exists, before it boots (`ChaosPlatformOptions.onCreated`). */
  onPlatform?: (platform: ChaosPlatform) => void;
  /** Where the run registers what a signal must undo (the faults, the platform), and removes it once undone. */
  teardown?: Teardown;
}

/** A finished run: the report (faults and platform findings filled in) and the exit code it deserves. */
export interface ChaosOutcome {
  report: ChaosReport;
  /** The platform's own findings: crashes, processes that did not come back. */
  incidents: string[];
  exitCode: 0 | 1;
}

/** The services `--replicas` multiplies (the others run once, as in the issue's platform). */
const REPLICATED = ['followups', 'outreach', 'messaging', 'outbox-dispatcher'] as const;

/**
 * Starts the platform, injects faults while the workload runs for `durationMs`, stops the faults
 * (everything healed), reconciles within `drainTimeoutMs`, and stops the platform (its schemas and
 * bus namespace dropped).
 */
export async function runChaos(o: ChaosOptions): Promise<ChaosOutcome> {
  const log = o.log ?? (() => undefined);
  const replicas = Object.fromEntries(REPLICATED.map((s) => [s, o.replicas]));
  log(`seed ${o.seed}: starting the platform (${REPLICATED.map((s) => `${s} ×${o.replicas}`).join(', ')}, the others ×1)`);
  let untrack = () => undefined as void;
  const platform = await ChaosPlatform.start({
    seed: o.seed,
    replicas: { ...DEFAULT_REPLICAS, ...replicas },
    env: o.env,
    label: o.label,
    log,
    onCreated: (p) => {
      untrack = o.teardown?.add('the platform', () => p.stop()) ?? untrack;
      o.onPlatform?.(p);
    },
  });
  try {
    return await runOn(platform, o);
  } finally {
    log('stopping the platform');
    await platform.stop();
    untrack();
  }
}

/**
 * The run on a platform already started (the short test run shares its platform with other
 * checks): faults while the workload runs, healing, the bounded drain and the reconciliation.
 */
export async function runOn(platform: ChaosPlatform, o: Omit<ChaosOptions, 'replicas'>): Promise<ChaosOutcome> {
  const log = o.log ?? (() => undefined);
  const rng = createRng(o.seed);
  // Forked first, in a fixed order, so the workload and the faults each replay whatever the other draws.
  const workloadRng = forkRng(rng);
  const faultRng = forkRng(rng);
  const injector = new FaultInjector(platform, faultRng, o.rates, o.verbose ? log : undefined);
  // Both schedules up front, from the seed alone: the machine's speed changes when things happen, never what.
  const asks = planWorkload(workloadRng, o.durationMs);
  const faultPlan = injector.planFor(o.durationMs);
  const schedule = scheduleFingerprint(asks, faultPlan);
  log(
    `schedule ${schedule.hash}: ${asks.length} asks (${Object.entries(schedule.asks)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}), ${faultPlan.length} faults (${Object.entries(schedule.faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')})`,
  );
  const crashesBefore = platform.crashes.length;
  log(`running the workload and the faults for ${Math.round(o.durationMs / 1000)} s`);
  const untrack = o.teardown?.add('the faults', () => injector.halt());
  injector.start(o.durationMs, faultPlan);
  const progress = setInterval(() => log(`… ${injector.events.length} faults so far, ${platform.crashes.length - crashesBefore} crashes`), 60_000);
  let ledger;
  try {
    ledger = await runWorkload(platform.target, { durationMs: o.durationMs, rng: workloadRng, plan: asks, log });
  } finally {
    clearInterval(progress);
    log('stopping the faults and healing every process');
    await injector.stop().catch(() => undefined);
    untrack?.();
  }
  const faults = injector.counts();
  if (o.drainTimeoutMs < RECOVERY_BOUND_MS) log(`the drain (${o.drainTimeoutMs / 1000} s) is shorter than the platform's documented recovery bound (${RECOVERY_BOUND_MS / 1000} s): a send still open may be on its way`);
  log(`draining (at most ${Math.round(o.drainTimeoutMs / 1000)} s) and reconciling ${ledger.length} sends`);
  const report = await reconcile(platform.target, ledger, { drainTimeoutMs: o.drainTimeoutMs, faults, durationMs: o.durationMs, log, deadLetters: () => platform.deadLetters() });
  report.schedule = schedule;
  const incidents = [...platform.crashes.slice(crashesBefore), ...injector.problems];
  report.crashes = incidents.length;
  report.details.push(...incidents);
  const violations = Object.values(report.violations).reduce((a, b) => a + b, 0);
  return { report, incidents, exitCode: violations === 0 && incidents.length === 0 ? 0 : 1 };
}

/** A bad command line: `npm run chaos` prints it with the usage and exits 2. */
export class ChaosOptionError extends Error {}

/** Largest values the options take: beyond them a run is a typo, not a test (and planning it would exhaust memory). */
export const OPTION_LIMITS = { durationS: 86_400, replicas: 8, faultsPerMin: 60, drainS: 3_600, seed: 0x7fff_ffff } as const;

/** What a run does when an option is not given (the seed aside: a new one each run). */
export const DEFAULT_OPTIONS = { durationMs: 600_000, replicas: 2, rates: DEFAULT_FAULT_RATES, drainTimeoutMs: 180_000, verbose: false } as const;

/** The options of a command line (everything but what a caller of `runChaos` adds). */
export type ParsedOptions = Omit<ChaosOptions, 'log' | 'env' | 'label' | 'onPlatform' | 'teardown'>;

/** Decimal digits only: `Number()` would also take `0x10`, `1e3`, ` 5`, `+5` and `5.`. */
const INTEGER = /^\d+$/;
/**
 * A rate: digits, and at most six decimals. Six are plenty for faults per minute, and keep every
 * rate printable as written (`String()` of a number of 10^-6 or more has no exponent), so the
 * replay command (`replayArgs`) reads back as the same number.
 */
const RATE = /^\d+(\.\d{1,6})?$/;

/**
 * Reads the command line. Numbers must be written out in decimal (seconds, the seed and replicas
 * as integers; rates with at most six decimals) and within `OPTION_LIMITS`; the seed is an
 * integer 0..2^31-1 (the generator's state is 32 bits: a larger seed would replay a smaller one).
 * @returns the options, or null for `--help`
 * @throws ChaosOptionError on a bad option
 */
export function parseOptions(argv: string[]): ParsedOptions | null {
  const o: ParsedOptions = { ...DEFAULT_OPTIONS, seed: Math.floor(Math.random() * OPTION_LIMITS.seed), rates: { ...DEFAULT_FAULT_RATES } };
  const number = (name: string, value: string | undefined, min: number, max: number, integer = false): number => {
    const n = value !== undefined && (integer ? INTEGER : RATE).test(value) ? Number(value) : NaN;
    if (!(n >= min && n <= max)) throw new ChaosOptionError(`${name} takes ${integer ? 'an integer' : 'a number (at most 6 decimals)'} from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].includes('=') && argv[i].startsWith('--') && !argv[i].startsWith('--rate=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined];
    const value = () => inline ?? argv[++i];
    if (flag === '--duration') o.durationMs = number('--duration', value(), 1, OPTION_LIMITS.durationS, true) * 1000;
    else if (flag === '--seed') o.seed = number('--seed', value(), 0, OPTION_LIMITS.seed, true);
    else if (flag === '--replicas') o.replicas = number('--replicas', value(), 1, OPTION_LIMITS.replicas, true);
    else if (flag === '--fault-rate') {
      const rate = number('--fault-rate', value(), 0, OPTION_LIMITS.faultsPerMin);
      for (const kind of FAULT_KINDS) o.rates[kind] = rate;
    } else if (flag === '--rate' || flag.startsWith('--rate=')) {
      const spec = flag.startsWith('--rate=') ? flag.slice('--rate='.length) : argv[++i];
      const parts = (spec ?? '').split('=');
      if (parts.length !== 2 || !FAULT_KINDS.includes(parts[0] as FaultKind)) throw new ChaosOptionError(`--rate takes <kind>=<per min>, kind one of ${FAULT_KINDS.join(', ')}`);
      o.rates[parts[0] as FaultKind] = number(`--rate ${parts[0]}`, parts[1], 0, OPTION_LIMITS.faultsPerMin);
    } else if (flag === '--drain') o.drainTimeoutMs = number('--drain', value(), RECOVERY_BOUND_MS / 1000, OPTION_LIMITS.drainS, true) * 1000;
    else if (flag === '--verbose' && inline === undefined) o.verbose = true;
    else if ((flag === '--help' || flag === '-h') && inline === undefined) return null;
    else throw new ChaosOptionError(`unknown option ${argv[i]}`);
  }
  return o;
}

/**
 * The arguments that make `parseOptions` answer `o` again (deep-equal): the seed and the duration
 * always, every other option only where it differs from `DEFAULT_OPTIONS`; the rates as one
 * `--fault-rate` when every kind has the same one, else `--rate` for each kind off its default.
 * Seconds must be whole (`parseOptions` takes nothing else).
 */
export function replayArgs(o: ParsedOptions): string[] {
  const args = ['--seed', String(o.seed), '--duration', String(o.durationMs / 1000)];
  if (o.replicas !== DEFAULT_OPTIONS.replicas) args.push('--replicas', String(o.replicas));
  const rateOf = (kind: FaultKind) => o.rates[kind] ?? DEFAULT_FAULT_RATES[kind];
  const against = (base: (kind: FaultKind) => number) => FAULT_KINDS.filter((k) => rateOf(k) !== base(k)).flatMap((k) => ['--rate', `${k}=${rateOf(k)}`]);
  const first = rateOf(FAULT_KINDS[0]);
  const uniform = FAULT_KINDS.every((k) => rateOf(k) === first) && against((k) => DEFAULT_FAULT_RATES[k]).length > 0;
  args.push(...(uniform ? ['--fault-rate', String(first)] : against((k) => DEFAULT_FAULT_RATES[k])));
  if (o.drainTimeoutMs !== DEFAULT_OPTIONS.drainTimeoutMs) args.push('--drain', String(o.drainTimeoutMs / 1000));
  if (o.verbose) args.push('--verbose');
  return args;
}

/** The command that replays `o` (`replayArgs`), as the run prints it. */
export function replayCommand(o: ParsedOptions): string {
  return `npm run chaos -- ${replayArgs(o).join(' ')}`;
}

const USAGE = 'usage: npm run chaos -- [--duration <s>] [--seed <n>] [--replicas <n>] [--fault-rate <per min>] [--rate <kind>=<per min>]... [--drain <s>] [--verbose]\n' + `fault kinds: ${FAULT_KINDS.join(', ')}\nSee README.md "What survives what".\n`;

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof ChaosOptionError)) throw err;
    process.stderr.write(`npm run chaos: ${err.message}\n${USAGE}`);
    process.exit(2);
  }
  if (!parsed) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const options = parsed;
  const started = Date.now();
  const log = (line: string) => process.stdout.write(`[chaos +${Math.round((Date.now() - started) / 1000)}s] ${line}\n`);
  const dir = join(process.cwd(), '.chaos');
  const file = join(dir, `seed-${options.seed}-${new Date(started).toISOString().replace(/[:.]/g, '-')}`);
  log(`replay: ${replayCommand(options)}`);

  let platform: ChaosPlatform | undefined;
  // Each process's kept output in a file of its own: an incident's excerpt in the report is a few hundred characters.
  let saved = false;
  const saveOutputs = () => {
    if (!platform || saved) return;
    saved = true;
    mkdirSync(`${file}-output`, { recursive: true });
    for (const { name, output } of platform.outputs()) writeFileSync(join(`${file}-output`, `${name.replace(/[^a-z0-9-]+/gi, '-')}.log`), output);
    log(`each process's last output (200 lines, 64 KB at most): ${file}-output/`);
  };
  const teardown = new Teardown(log);
  // Registered first, so a signal's teardown writes it last, with what the processes said while stopping.
  teardown.add("the processes' output", saveOutputs);
  const onSignal = interruptHandler({ teardown, log, exit: (code) => process.exit(code), abandon: () => platform?.abandon(), leftovers: () => (platform ? `Left behind, if any: ${platform.leftovers()}` : 'Nothing was created yet.') });
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Once interrupted, the handler exits when the teardown is done: the run's own ending (its error, as the platform goes) is not the outcome.
  const interrupted = () => new Promise<never>(() => undefined);

  let outcome: ChaosOutcome;
  try {
    outcome = await runChaos({ ...options, log, teardown, onPlatform: (p) => (platform = p) });
  } catch (err) {
    if (teardown.started) return interrupted();
    saveOutputs();
    throw err;
  }
  if (teardown.started) return interrupted();
  saveOutputs();
  process.stdout.write(`\n${formatReport(outcome.report)}\n`);
  // Every detail line, uncapped, with the report's JSON: a long run's violations outgrow the terminal.
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${file}.txt`, `${formatReport(outcome.report, Number.POSITIVE_INFINITY)}\n`);
  writeFileSync(`${file}.json`, `${JSON.stringify({ options: { ...options, rates: options.rates }, report: outcome.report, incidents: outcome.incidents }, null, 2)}\n`);
  process.stdout.write(`full report: ${file}.txt (every detail line) and ${file}.json\n`);
  if (outcome.incidents.length) process.stdout.write(`platform incidents (${outcome.incidents.length}):\n${outcome.incidents.map((l) => `  ${l}`).join('\n')}\n`);
  process.stdout.write(`seed ${options.seed} — replay: ${replayCommand(options)}\n`);
  process.exit(outcome.exitCode);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err) => {
    process.stderr.write(`npm run chaos failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
