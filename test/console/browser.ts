import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it when missing). */
export const CHROMIUM = '/usr/bin/chromium';
const ROOT = path.resolve(import.meta.dirname, '../..');
/** Where each page's screenshot goes (gitignored; CI keeps it as an artifact). */
export const ARTIFACTS = path.join(ROOT, 'test-artifacts/console');

/**
 * Flags for a quiet, reproducible headless Chromium: no GPU, no QUIC, no first-run, no background
 * network (component updates, sync), so the only traffic is the page's own.
 */
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A headless Chromium with a fresh profile, deleted on close. */
export class Browser {
  private constructor(
    readonly context: BrowserContext,
    private readonly profile: string,
  ) {}

  /** @throws Error saying how to install Chromium when /usr/bin/chromium is missing */
  static async launch(): Promise<Browser> {
    if (!existsSync(CHROMIUM)) throw new Error(`the console's browser tests need Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (Debian/Ubuntu; .ci/run does this in CI)`);
    const profile = await mkdtemp(path.join(tmpdir(), 'tp-console-chromium-'));
    const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1280, height: 900 } });
    return new Browser(context, profile);
  }

  async page(): Promise<Page> {
    return this.context.pages()[0] ?? this.context.newPage();
  }

  async close(): Promise<void> {
    await this.context.close().catch(() => undefined);
    await rm(this.profile, { recursive: true, force: true });
  }
}

let axeSource: string | undefined;

/** One axe-core finding, the fields a failure message needs. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is now (WCAG 2 A/AA rules). axe is
 * evaluated through the DevTools protocol, which the console's CSP (no inline script) does not
 * govern, so the page's own policy stays as served.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Saves a full-page screenshot as test-artifacts/console/<name>.png; answers its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
