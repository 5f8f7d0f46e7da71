import path from 'node:path';
import { consoleUrl, DEMO_ADMIN_EMAIL } from '../start/demo.js';
import { restoreSandboxProviders } from './demo-context.js';
import { demoContext, DemoRuns, runDemo } from './run-demo.js';

export interface DemoOnceOptions {
  /** `TOUCHPOINT_STATE_DIR`, resolved. */
  stateDir: string;
  gatewayUrl: string;
  sandboxUrl: string;
  organizationId: string;
  secret: string;
  /** Prints an orchestrator line (`[touchpoint] ...`). */
  say: (text: string) => void;
  /** Prints a transcript line as is. */
  write: (line: string) => void;
  /** True once the user asked `npm start` to stop: the run is then not remembered. */
  stopping: () => boolean;
}

/**
 * What `npm start` does after every process is ready: runs the demo the first time for
 * this demo organization, and remembers it in `<state dir>/demo-runs.json` so the next start
 * skips it. A failed scenario is printed, not fatal: the platform keeps serving.
 */
export async function runDemoOnce(options: DemoOnceOptions): Promise<void> {
  const runs = new DemoRuns(path.join(options.stateDir, 'demo-runs.json'));
  if (await runs.hasRun(options.organizationId)) {
    options.say('the demo already ran for this organization (npm run demo runs it again)');
    // The sandbox starts empty every time; the demo's sender and mailbox are still connected here.
    try {
      const restored = await restoreSandboxProviders(demoContext({ gatewayUrl: options.gatewayUrl, sandboxUrl: options.sandboxUrl, secret: options.secret, organizationId: options.organizationId, write: options.write }));
      if (restored.length) options.say(`the sandbox knows the demo's providers again: ${restored.join(', ')}`);
    } catch (err) {
      options.say(`could not teach the sandbox the demo's providers again (${(err as Error).message}); the demo's sends will fail until npm run demo runs`);
    }
    return;
  }
  options.say('running the demo once (npm start -- --no-demo skips it): every step goes through the REST API, signed webhooks and the sandbox');
  const result = await runDemo({ gatewayUrl: options.gatewayUrl, sandboxUrl: options.sandboxUrl, secret: options.secret, organizationId: options.organizationId, write: options.write });
  if (options.stopping()) return;
  await runs.markRun(options.organizationId, result.failures.length);
  options.say(result.failures.length ? `the demo finished with ${result.failures.length} failed scenario(s) (above); the platform keeps serving` : `the demo finished; look the ids up at ${options.gatewayUrl}/docs. The platform keeps serving; Ctrl-C stops everything.`);
  const pending = result.outreach?.pending?.actionId;
  options.say(`operator console: ${consoleUrl(options.gatewayUrl)}, sign in with the demo admin's API key (${DEMO_ADMIN_EMAIL}; the "API key" line above)${pending ? `; draft ${pending} waits for your approval on the Review page` : ''}`);
}
