import { WakeSignal } from '@touchpoint/runtime';
import { ReleaseLoop } from '../release.loop.js';
import { FixedClock } from '@touchpoint/time';
import { ReleaseService } from '../release.service.js';

/** A release service that only answers the idle worker's questions, on the real clock. */
function releaseWith(due: number | null) {
  const returned: number[] = [];
  let taken = false;
  const release = {
    takeNextDue: () => (taken ? null : ((taken = true), due)),
    msUntil: (at: number) => at - Date.now(),
    returnNextDue: (at: number) => returned.push(at),
  } as unknown as ReleaseService;
  return { release, returned };
}

const idleOf = (loop: ReleaseLoop) => (loop as unknown as { idle(): Promise<void> }).idle();

describe(`${ReleaseLoop.name} idle wait`, () => {
  const config = { FOLLOWUP_POLL_MS: 2000 } as never;
  const logger = {} as never;

  function loopWith(release: ReleaseService, signal: WakeSignal): ReleaseLoop {
    const loop = new ReleaseLoop(release, signal, config, logger);
    (loop as unknown as { running: boolean }).running = true;
    return loop;
  }

  it('waits until the moment a step is due, not the whole poll', async () => {
    const due = Date.now() + 150;
    const { release, returned } = releaseWith(due);
    const started = Date.now();
    await idleOf(loopWith(release, new WakeSignal()));
    expect(Date.now()).toBeGreaterThanOrEqual(due);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(returned).toEqual([]);
  });

  it('gives the moment back when woken for other work before it, so the next idle worker waits for it', async () => {
    const due = Date.now() + 500;
    const { release, returned } = releaseWith(due);
    const signal = new WakeSignal();
    const waiting = idleOf(loopWith(release, signal));
    await new Promise((r) => setTimeout(r, 50));
    signal.wake();
    await waiting;
    expect(Date.now()).toBeLessThan(due);
    expect(returned).toEqual([due]);
  });

  it('polls when no step is due within the poll, and never waits past the poll whatever the clock says', async () => {
    const signal = new WakeSignal();
    const none = releaseWith(null);
    const waiting = idleOf(loopWith(none.release, signal));
    await new Promise((r) => setTimeout(r, 50));
    signal.wake();
    await waiting;
    expect(none.returned).toEqual([]);
    // A wall clock that stepped back an hour: the moment looks an hour away, the wait still ends with the poll.
    const skewed = { takeNextDue: () => Date.now() + 100, msUntil: (at: number) => at - Date.now() + 3_600_000, returnNextDue: () => undefined } as unknown as ReleaseService;
    const started = performance.now();
    await idleOf(loopWith(skewed, new WakeSignal()));
    expect(performance.now() - started).toBeLessThan(2000 + 500);
  });
});

describe(`${ReleaseService.name} moments due within a poll`, () => {
  const clock = new FixedClock(new Date('2026-12-06T12:00:00Z'));
  const t0 = clock.now().getTime();
  const service = () => {
    const s = Object.create(ReleaseService.prototype) as ReleaseService;
    Object.assign(s, { nextDue: [], clock, config: { FOLLOWUP_POLL_MS: 1000 } });
    return s;
  };

  it('hands out the future moments in order, one per idle worker, and drops the past ones', () => {
    const s = service();
    for (const at of [t0 + 600, t0 + 250, t0 + 250, t0 - 10, t0 + 2000]) s.returnNextDue(at);
    expect(s.takeNextDue(1000)).toBe(t0 + 250);
    expect(s.takeNextDue(1000)).toBe(t0 + 600);
    // Beyond the horizon: left for the poll, and kept for a longer one.
    expect(s.takeNextDue(1000)).toBeNull();
    expect(s.takeNextDue(5000)).toBe(t0 + 2000);
    expect(s.takeNextDue(5000)).toBeNull();
  });
});
