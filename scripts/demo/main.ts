import { readFile } from 'node:fs/promises';
import { runDemo } from './run-demo.js';

/**
 * `npm run demo`: runs the demo again against a running platform, with the demo organization
 * `npm start` saved. Environment: GATEWAY_URL (default http://127.0.0.1:3000), SANDBOX_URL
 * (default http://127.0.0.1:3900), TOUCHPOINT_STATE_DIR (default .touchpoint). Exit code 1 when a
 * scenario failed.
 */
const env = process.env;
const stateFile = `${env.TOUCHPOINT_STATE_DIR ?? '.touchpoint'}/demo.json`;
const state = JSON.parse(await readFile(stateFile, 'utf8')) as { demos: Record<string, { organization_id: string; secret?: string }> };
const demo = Object.values(state.demos).find((d) => d.secret);
if (!demo?.secret) {
  process.stderr.write(`no demo organization with a key in ${stateFile}: run npm start first\n`);
  process.exit(2);
}
const result = await runDemo({
  gatewayUrl: env.GATEWAY_URL ?? 'http://127.0.0.1:3000',
  sandboxUrl: env.SANDBOX_URL ?? 'http://127.0.0.1:3900',
  secret: demo.secret,
  organizationId: demo.organization_id,
  write: (line) => process.stdout.write(line),
});
process.exit(result.failures.length ? 1 : 0);
