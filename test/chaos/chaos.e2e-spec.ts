import { FAULT_KINDS, FaultInjector } from './faults.js';
import { runOn } from './main.js';
import { ChaosPlatform, RECOVERY_BOUND_MS } from './platform.js';
import { createRng } from './rng.js';

/** The seed of the faults injected here; the short seeded run is `npm run chaos:smoke` (same seed). */
const SEED = 1717;

/** The short seeded run: its workload length, s, and each fault kind's rate, per minute. */
const SHORT_RUN_S = 30;
const SHORT_RUN_FAULTS_PER_MIN = 3;

/**
 * The chaos harness inside `npm test`: the whole platform from the build (`dist/`, which the
 * suite's global set-up builds), with replicas, each process behind its own proxies. First every
 * fault kind once, on demand, and everything comes back; then a short seeded run of the same
 * harness on the same platform (workload, random faults, drain, reconciliation against the
 * sandbox's wire), which must find no duplicate, lost, forbidden, paced-too-close or stuck send.
 * `npm run chaos:smoke` is the same seed for 40 s; `npm run chaos` the 10-minute run.
 */
describe('chaos harness', () => {
  let platform: ChaosPlatform;

  beforeAll(async () => {
    platform = await ChaosPlatform.start({ seed: SEED, label: 'chaos' });
  }, 420_000);

  afterAll(async () => {
    await platform?.stop();
  }, 120_000);

  it('brings every process back after one fault of each kind, reconnected through its proxies, with no fault left behind', async () => {
    const sut = new FaultInjector(platform, createRng(SEED), {});
    await Promise.all(FAULT_KINDS.map((kind) => sut.inject(kind)));
    expect(new Set(sut.events.map((e) => e.kind))).toEqual(new Set(FAULT_KINDS));

    await sut.stop();

    expect(sut.problems).toEqual([]);
    expect(platform.crashes).toEqual([]);
    for (const p of platform.processes) {
      expect({ name: p.name, ready: await p.ready() }).toEqual({ name: p.name, ready: true });
      // Ready means its database answered through its proxy; the broker link must be back too.
      expect({ name: p.name, amqp: p.amqp!.openConnections > 0 }).toEqual({ name: p.name, amqp: true });
    }
    const killed = sut.events.find((e) => e.kind === 'process_kill')!.detail.split(' ')[0];
    expect(platform.processes.find((p) => p.name === killed)!.exits.at(-1)).toMatchObject({ signal: 'SIGKILL', expected: true });
    expect(await platform.sandbox.get('/sandbox/control/meta/faults')).toEqual({ faults: [] });
    expect(await platform.sandbox.get('/sandbox/control/nylas/faults')).toEqual({ faults: [] });
    expect((await platform.sandbox.metaSettings({})).webhook_faults).toMatchObject({ duplicate: 0, late: 0, out_of_order: 0 });
  }, 420_000);

  it('a short seeded run: no duplicate, lost, forbidden, paced-too-close or stuck send, and no crash', async () => {
    const lines: string[] = [];
    const rates = Object.fromEntries(FAULT_KINDS.map((k) => [k, SHORT_RUN_FAULTS_PER_MIN]));
    const outcome = await runOn(platform, { seed: SEED, durationMs: SHORT_RUN_S * 1000, rates, drainTimeoutMs: RECOVERY_BOUND_MS, label: 'chaos', log: (line) => lines.push(line) });

    // The run's transcript and its details, when it failed: what a replay of the seed would show.
    if (outcome.exitCode !== 0) process.stderr.write(`${lines.join('\n')}\n${outcome.report.details.join('\n')}\n`);
    expect(outcome.report.sends.asked).toBeGreaterThan(10);
    expect({ violations: outcome.report.violations, incidents: outcome.incidents }).toEqual({ violations: { duplicates: 0, lost: 0, forbidden: 0, pacing: 0, stuck: 0, deadLetters: 0 }, incidents: [] });
    // The table names the faults it injected: a run that injected none proves nothing.
    expect(Object.values(outcome.report.faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(3);
    expect(outcome.exitCode).toBe(0);
  }, 600_000);
});
