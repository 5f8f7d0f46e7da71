import 'reflect-metadata';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '@touchpoint/config';
import { ensureDatabase } from '@touchpoint/database';
import { AdminCliError, COMPILED_CLI, compiledAdminCli, hasAdminCli, npmAdminCli } from './admin-cli.js';
import { runDemoOnce } from '../demo/start-hook.js';
import { checkKeyAtGateway, consoleUrl, DEMO_ADMIN_EMAIL, demoKey, ensureDemo, type DemoAccess } from './demo.js';
import { renderLogLine } from './log-format.js';
import { portIsFree, preflight, unreachableMessage } from './preflight.js';
import { portVariable, STARTED_PROCESSES, StartConfig, type StartedProcess } from './start.config.js';
import { ChildExitedError, ReadyTimeoutError, Supervisor } from './supervisor.js';

/**
 * `npm start`: the whole platform in one foreground command. Checks PostgreSQL
 * and RabbitMQ, creates the database, migrates every schema with the admin CLI, runs the seven
 * services and the sandbox from the compiled `dist/` (scripts/start.mjs builds it first) with
 * combined logs, waits until each answers `/health/ready`, makes sure a demo organization and API
 * key exist, and prints how to call the API. Ctrl-C or SIGTERM stops everything.
 *
 * Options: `--no-demo` (no demo organization), `--only a,b` (a subset of the processes),
 * `--verbose` (NestJS start-up lines too). Exit codes: 0 after a requested stop, 1 when a
 * dependency is unreachable or a process fails, 2 on bad options or configuration.
 */

/** The repository root (this file runs as dist/scripts/start/main.js, or from source). */
const ROOT = repositoryRoot(path.dirname(fileURLToPath(import.meta.url)));
const CHILD_GUARD = path.join(ROOT, 'scripts/start/child-guard.mjs');

interface Options {
  demo: boolean;
  only?: StartedProcess[];
  verbose: boolean;
}

const out = (text: string) => process.stdout.write(text);

function parseOptions(argv: string[]): Options {
  const options: Options = { demo: true, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--no-demo') options.demo = false;
    else if (arg === '--verbose') options.verbose = true;
    else if (arg === '--only' || arg.startsWith('--only=')) {
      const value = arg.includes('=') ? arg.slice('--only='.length) : argv[++i];
      const names = (value ?? '').split(',').filter(Boolean);
      const unknown = names.filter((n) => !(STARTED_PROCESSES as readonly string[]).includes(n));
      if (names.length === 0 || unknown.length) usage(`--only takes a comma-separated list of ${STARTED_PROCESSES.join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`);
      options.only = names as StartedProcess[];
    } else if (arg === '--help' || arg === '-h') usage();
    else usage(`unknown option ${arg}`);
  }
  return options;
}

function usage(problem?: string): never {
  const text = 'usage: npm start [-- [--no-demo] [--only gateway,followups,...] [--verbose]]\n' + 'Runs every Touchpoint service and the provider sandbox; see README.md "Quick start" for the environment variables.\n';
  if (problem) process.stderr.write(`npm start: ${problem}\n${text}`);
  else out(text);
  process.exit(problem ? 2 : 0);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  let config: StartConfig;
  try {
    config = loadConfig(StartConfig);
  } catch (err) {
    process.stderr.write(`npm start: ${err instanceof ConfigError ? err.message : String(err)}\n`);
    process.exit(2);
  }
  const color = process.stdout.isTTY === true && config.NO_COLOR === '';
  const verbose = options.verbose || config.START_VERBOSE;
  const say = (text: string) => out(`${color ? '\x1b[1m' : ''}[touchpoint]${color ? '\x1b[0m' : ''} ${text}\n`);
  const names = options.only ?? [...STARTED_PROCESSES];
  const gatewayUrl = config.urlOf('gateway');

  const unreachable = await preflight(config.DATABASE_URL, config.AMQP_URL);
  if (unreachable.length) {
    process.stderr.write(`npm start: ${unreachableMessage(unreachable)}\n`);
    process.exit(1);
  }
  const database = new URL(config.DATABASE_URL).pathname.slice(1);
  try {
    if (await ensureDatabase(config.DATABASE_URL)) say(`created database ${database}`);
  } catch (err) {
    process.stderr.write(`npm start: cannot create the database ${database} (${(err as Error).message}); create it yourself or point DATABASE_URL at one that exists\n`);
    process.exit(1);
  }

  const taken: string[] = [];
  for (const name of names) {
    if (!(await portIsFree(config.HOST, config.portOf(name)))) taken.push(`${config.portOf(name)} (${name}; set ${portVariable(name)})`);
  }
  if (taken.length) {
    process.stderr.write(`npm start: port ${taken.join(', ')} already in use on ${config.HOST}: is another \`npm start\` running? Stop it or move the port.\n`);
    process.exit(1);
  }

  const cliLog = (line: string) => {
    const rendered = renderLogLine('cli', '\x1b[90m', line, { color, verbose, tagWidth: tagWidth(names) });
    if (rendered !== undefined) out(`${rendered}\n`);
  };
  // The CLI of the contract (`npm run cli`), run from the build just made when it is there.
  const cli = existsSync(path.join(ROOT, COMPILED_CLI)) ? compiledAdminCli(ROOT, process.env, cliLog) : hasAdminCli(ROOT) ? npmAdminCli(ROOT, process.env, cliLog) : undefined;
  if (cli) {
    say('migrating every schema (admin CLI: migrate)');
    try {
      const { migrated } = await cli.run<{ migrated: Record<string, string[]> }>(['migrate']);
      const applied = Object.entries(migrated).filter(([, list]) => list.length > 0);
      say(applied.length ? `migrated ${applied.map(([svc, list]) => `${svc} (${list.length})`).join(', ')}` : 'every schema is up to date');
    } catch (err) {
      process.stderr.write(`npm start: ${(err as Error).message}\n`);
      process.exit(1);
    }
  } else {
    say('the admin CLI (npm run cli) is not in this checkout: each service migrates its own schema as it starts, and no demo organization is made');
  }

  const supervisor = new Supervisor({ write: out, format: { color, verbose }, tagWidth: tagWidth(names), stopTimeoutMs: config.STOP_TIMEOUT_MS });
  let stopping = false;
  const stop = async (code: number, why?: string) => {
    if (stopping) return;
    stopping = true;
    if (why) say(why);
    await supervisor.stopAll();
    say(code === 0 ? 'stopped' : 'stopped after a failure');
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0, `${signal}: stopping every process`));
  // npm exits on SIGTERM without passing it on, which would leave this process (and every service)
  // running under init: when the process that started us is gone, stop as if signalled.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void stop(0, 'the process that ran npm start is gone: stopping every process');
  }, 1000).unref();

  say(`starting ${names.join(', ')}${names.includes('gateway') ? `; the gateway will answer at ${gatewayUrl}` : ''}`);
  const started = Date.now();
  for (const name of names) {
    supervisor.start({
      name,
      command: process.execPath,
      args: ['--enable-source-maps', '--import', CHILD_GUARD, path.join(ROOT, 'dist/apps', name, 'src/main.js')],
      cwd: ROOT,
      env: childEnv(name, config, process.env),
      readyUrl: `${config.urlOf(name)}/health/ready`,
    });
  }

  const ready = supervisor.waitReady(config.START_TIMEOUT_MS);
  // The demo organization is made through the CLI and the database only, so it is prepared while
  // the services boot; only checking a remembered key needs the gateway up.
  const stateFile = path.resolve(ROOT, config.TOUCHPOINT_STATE_DIR, 'demo.json');
  const demoRun =
    options.demo && cli && names.includes('gateway')
      ? ensureDemo({
          cli,
          stateFile,
          key: demoKey(config.DATABASE_URL, config.DB_SCHEMA_PREFIX),
          checkKey: async (secret) => {
            await ready;
            return checkKeyAtGateway(gatewayUrl, secret);
          },
        })
      : undefined;
  // Settled below; this only keeps an early failure from being reported as unhandled.
  demoRun?.catch(() => undefined);

  try {
    await ready;
  } catch (err) {
    if (err instanceof ChildExitedError) {
      say(`${err.message} during start-up; its last lines:\n${err.lastLines.map((l) => `    ${l}`).join('\n')}`);
    } else if (err instanceof ReadyTimeoutError) {
      say(`${err.message}. Raise START_TIMEOUT_MS if the machine is just slow.`);
    } else {
      say(`start-up failed: ${(err as Error).message}`);
    }
    await stop(1);
    return;
  }
  if (stopping) return;
  supervisor.onUnexpectedExit((err) => {
    say(`${err.message}; its last lines:\n${err.lastLines.map((l) => `    ${l}`).join('\n')}`);
    void stop(1);
  });

  let demo: DemoAccess | undefined;
  if (demoRun) {
    const shown = displayPath(stateFile);
    try {
      const result = await demoRun;
      demo = result.access;
      say(result.created ? `created the demo organization and API key; saved in ${shown}` : `using the demo organization saved in ${shown}`);
    } catch (err) {
      // A Ctrl-C during the CLI call interrupts it too; that is not worth a message.
      if (!stopping) say(`could not prepare the demo organization: ${err instanceof AdminCliError ? err.message : String(err)}`);
    }
  }
  if (stopping) return;
  out(banner({ names, config, gatewayUrl, demo, seconds: (Date.now() - started) / 1000, color }));
  if (demo?.secret && names.includes('gateway') && names.includes('sandbox')) {
    await runDemoOnce({
      stateDir: path.resolve(ROOT, config.TOUCHPOINT_STATE_DIR),
      gatewayUrl,
      sandboxUrl: config.urlOf('sandbox'),
      organizationId: demo.organization_id,
      secret: demo.secret,
      say,
      write: out,
      stopping: () => stopping,
    }).catch((err) => {
      if (!stopping) say(`the demo could not run: ${(err as Error).message}`);
    });
  }
}

/**
 * The environment of one child: ours, passed through whole (each service validates its own
 * variables with its config class), plus its own PORT.
 */
function childEnv(name: StartedProcess, config: StartConfig, inherited: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...inherited, PORT: String(config.portOf(name)) };
  // The sandbox fires provider webhooks at the gateway, wherever it was moved.
  if (name === 'sandbox') env.GATEWAY_URL = config.GATEWAY_URL || config.urlOf('gateway');
  // The providers' defaults name the sandbox's default port: follow it when SANDBOX_PORT moved it,
  // unless the user pointed them at a real provider.
  if (name === 'outbox-dispatcher') {
    for (const variable of ['WHATSAPP_GRAPH_BASE_URL', 'NYLAS_API_BASE_URL', 'UNIPILE_API_BASE_URL']) if (!inherited[variable]) env[variable] = config.urlOf('sandbox');
    // The emails' unsubscribe link and List-Unsubscribe header name the gateway, wherever it was moved.
    if (!inherited.UNSUBSCRIBE_BASE_URL) env.UNSUBSCRIBE_BASE_URL = config.GATEWAY_URL || config.urlOf('gateway');
  }
  if (name === 'ai-gateway' && !inherited.AI_BASE_URL) env.AI_BASE_URL = `${config.urlOf('sandbox')}/v1`;
  return env;
}

/** The nearest folder above `from` holding package-lock.json (dist/ has only a package.json). */
function repositoryRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package-lock.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package-lock.json above ${from}`);
  }
}

/** A path relative to the repository when inside it, else absolute. */
function displayPath(file: string): string {
  const relative = path.relative(ROOT, file);
  return relative.startsWith('..') ? file : relative;
}

function tagWidth(names: readonly string[]): number {
  return Math.max(...names.map((n) => n.length), 'cli'.length);
}

function banner(input: { names: StartedProcess[]; config: StartConfig; gatewayUrl: string; demo?: DemoAccess; seconds: number; color: boolean }): string {
  const { names, config, gatewayUrl, demo, color } = input;
  const bold = (t: string) => (color ? `\x1b[1m${t}\x1b[0m` : t);
  const rule = '─'.repeat(72);
  const lines = [rule, bold(`Touchpoint is running: ${names.length} processes ready in ${input.seconds.toFixed(1)} s`)];
  if (names.includes('gateway')) {
    lines.push(`  gateway        ${gatewayUrl}`, `  API docs       ${gatewayUrl}/docs`);
  }
  if (names.includes('sandbox')) lines.push(`  sandbox        ${config.urlOf('sandbox')}  (stand-in for Meta, Nylas, Unipile and the model)`);
  if (demo?.secret) {
    lines.push(`  organization   ${demo.organization_id}`, `  API key        ${demo.secret}   (all scopes; kept in ${displayPath(path.resolve(ROOT, config.TOUCHPOINT_STATE_DIR, 'demo.json'))})`, `  try it         curl -H "Authorization: Bearer ${demo.secret}" ${gatewayUrl}/me`);
  }
  if (names.includes('gateway')) {
    lines.push(`  console        ${consoleUrl(gatewayUrl)}   (${demo?.secret ? `sign in with the API key above, the demo admin's (${DEMO_ADMIN_EMAIL})` : "sign in with a member's own key (admin CLI: apikey:create)"})`);
  }
  lines.push('Ctrl-C stops everything.', rule);
  return `${lines.join('\n')}\n`;
}

await main();
