import { FAULT_KINDS, planFaults, uniformRates } from './faults.js';
import { createRng, forkRng } from './rng.js';
import { planWorkload, scheduleFingerprint, START_GAP_MS } from './workload.js';

const PROCESSES = ['gateway#1', 'followups#1', 'followups#2', 'outreach#1', 'outreach#2', 'messaging#1', 'messaging#2'];

/** Both schedules of a run as `runOn` draws them: the workload's stream first, then the faults'. */
function schedules(seed: number, durationMs = 120_000) {
  const rng = createRng(seed);
  const workload = forkRng(rng);
  const faults = forkRng(rng);
  const asks = planWorkload(workload, durationMs);
  const planned = planFaults(forkRng(faults), uniformRates(3), durationMs, PROCESSES);
  return { asks, faults: planned, fingerprint: scheduleFingerprint(asks, planned) };
}

describe('the chaos schedules', () => {
  it('are the same for the same seed: every ask with its offset, kind, follow-ons, and every fault', () => {
    const a = schedules(1717);
    const b = schedules(1717);

    expect(b.asks).toEqual(a.asks);
    expect(b.faults).toEqual(a.faults);
    expect(b.fingerprint).toEqual(a.fingerprint);
  });

  it('differ for another seed, and the fingerprint tells', () => {
    const a = schedules(1717);
    const b = schedules(1243032490);

    expect(b.asks).not.toEqual(a.asks);
    expect(b.faults).not.toEqual(a.faults);
    expect(b.fingerprint.hash).not.toBe(a.fingerprint.hash);
  });

  it('fills the duration with asks at the planned gaps, numbered in order, each follow-on keyed to an earlier ask', () => {
    const { asks, fingerprint } = schedules(1717, 40_000);

    expect(asks[0]!.atMs).toBe(0);
    expect(asks.at(-1)!.atMs).toBeLessThan(40_000);
    asks.slice(1).forEach((x, i) => {
      expect(x.n).toBe(i + 2);
      expect(x.atMs - asks[i]!.atMs).toBeGreaterThanOrEqual(START_GAP_MS[0]);
      expect(x.atMs - asks[i]!.atMs).toBeLessThanOrEqual(START_GAP_MS[1]);
    });
    for (const x of asks) if (x.kind === 'status' && x.of !== null) expect(x.of).toBeLessThan(x.n);
    expect(Object.values(fingerprint.asks).reduce((s, n) => s + n, 0)).toBe(asks.length);
  });

  it('plans every fault kind at its rate within the duration, in offset order, naming only running processes', () => {
    const { faults } = schedules(1717, 600_000);

    expect(new Set(faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
    for (const kind of FAULT_KINDS) expect(faults.filter((f) => f.kind === kind).length).toBeGreaterThanOrEqual(15);
    expect(faults.map((f) => f.atMs)).toEqual([...faults.map((f) => f.atMs)].sort((x, y) => x - y));
    expect(faults.every((f) => f.atMs < 600_000 && (f.target === undefined || PROCESSES.includes(f.target)))).toBe(true);
  });

  it("keeps one kind's faults when another kind's rate changes", () => {
    const rng = () => createRng(5);
    const kills = (rates: Parameters<typeof planFaults>[1]) => planFaults(rng(), rates, 300_000, PROCESSES).filter((f) => f.kind === 'process_kill');

    expect(kills({ process_kill: 2, provider_5xx: 0 })).toEqual(kills({ process_kill: 2, provider_5xx: 5 }));
  });
});
