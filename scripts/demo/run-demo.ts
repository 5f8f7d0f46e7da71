import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type FloodResult, floodScenario } from './abuse-scenario.js';
import { type DemoContext, prepareWhatsapp } from './demo-context.js';
import { type CancelOnReplyResult, cancelOnReplyScenario, type SeedFlowResult, seedFlowScenario } from './followups-scenarios.js';
import { GatewayClient, SandboxClient } from './http-clients.js';
import { type OutreachResult, outreachScenario } from './outreach-scenario.js';

/**
 * The demo's WhatsApp phone-number id for an organization: a phone-number id belongs to one
 * organization in a database, so each demo organization gets its own (15 digits from its id; the
 * sandbox accepts any).
 */
export function demoPhoneNumberId(organizationId: string): string {
  const digits = BigInt(`0x${createHash('sha256').update(organizationId).digest('hex').slice(0, 15)}`)
    .toString()
    .padStart(15, '0');
  return `9${digits.slice(-14)}`;
}

export interface DemoOptions {
  gatewayUrl: string;
  sandboxUrl: string;
  /** An API key of the organization with every scope. */
  secret: string;
  organizationId: string;
  /** Receives each transcript line (with its newline). */
  write: (line: string) => void;
  /** Per asynchronous step, ms; default 30 s. */
  stepTimeoutMs?: number;
}

/** What each scenario did (`error` when it failed: the others still run). */
export interface DemoResult {
  seedFlow?: SeedFlowResult;
  cancelOnReply?: CancelOnReplyResult;
  flood?: FloodResult;
  outreach?: OutreachResult;
  failures: Array<{ scenario: string; message: string }>;
}

/**
 * The demo: real work through the gateway's public REST API, the signed provider
 * webhooks and the sandbox's control API only, printed as a short transcript whose lines name
 * the ids and states (look them up at `/docs`). Scenarios run in order; one that fails is
 * reported and the next still runs.
 */
/** The clients and names one demo run (or a later start's restore) works with. */
export function demoContext(options: DemoOptions): DemoContext {
  const width = 'cancel_on_reply'.length;
  return {
    gateway: new GatewayClient(options.gatewayUrl, options.secret),
    sandbox: new SandboxClient(options.sandboxUrl),
    organizationId: options.organizationId,
    phoneNumberId: demoPhoneNumberId(options.organizationId),
    stepTimeoutMs: options.stepTimeoutMs ?? 30_000,
    runTag: Date.now().toString(36),
    say: (section, text) => options.write(`[demo] ${section.padEnd(width)}  ${text}\n`),
  };
}

export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const ctx = demoContext(options);
  const result: DemoResult = { failures: [] };
  const attempt = async <T>(scenario: string, run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run();
    } catch (err) {
      const message = (err as Error).message;
      result.failures.push({ scenario, message });
      ctx.say(scenario, `FAILED: ${message}`);
      return undefined;
    }
  };
  ctx.say('demo', `organization ${options.organizationId}, through ${options.gatewayUrl} and the sandbox at ${options.sandboxUrl}`);
  const whatsapp = await attempt('setup', () => prepareWhatsapp(ctx));
  if (whatsapp) {
    result.seedFlow = await attempt('follow-ups', () => seedFlowScenario(ctx));
    result.cancelOnReply = await attempt('cancel_on_reply', () => cancelOnReplyScenario(ctx));
    result.flood = await attempt('abuse', () => floodScenario(ctx));
  }
  result.outreach = await attempt('outreach', () => outreachScenario(ctx));
  ctx.say('demo', result.failures.length ? `done with ${result.failures.length} failed scenario(s): ${result.failures.map((f) => f.scenario).join(', ')}` : 'done');
  return result;
}

/**
 * Remembers which organizations already saw the demo (`<state dir>/demo-runs.json`), so `npm
 * start` runs it once per demo organization.
 */
export class DemoRuns {
  constructor(private readonly file: string) {}

  async hasRun(organizationId: string): Promise<boolean> {
    return Boolean((await this.read())[organizationId]);
  }

  async markRun(organizationId: string, failures: number): Promise<void> {
    const runs = await this.read();
    runs[organizationId] = { ran_at: new Date().toISOString(), failures };
    await mkdir(path.dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(runs, null, 2)}\n`);
    await rename(temporary, this.file);
  }

  private async read(): Promise<Record<string, { ran_at: string; failures: number }>> {
    try {
      return JSON.parse(await readFile(this.file, 'utf8'));
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return {};
      throw err;
    }
  }
}
