import { FAULT_KINDS, FaultInjector } from './faults.js';
import { ChaosPlatform } from './platform.js';
import { createRng } from './rng.js';

/** The seed of the faults injected here; the short seeded run is `npm run chaos:smoke` (same seed). */
const SEED = 1717;

/**
 * The chaos harness inside `npm test` (issue 17): the whole platform from the build (`dist/`, which
 * the suite's global set-up builds), with replicas, each process behind its own proxies. First every
 * fault kind once, on demand, and everything comes back. The short seeded run with a workload
 * (`npm run chaos:smoke`) is not in `npm test` yet: its first runs found ambiguous follow-up sends the
 * reconciliation could not match to /outbox/ambiguous and wire gaps of 6,481-6,492 ms on a pair,
 * both still open in issue 17.
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
});
