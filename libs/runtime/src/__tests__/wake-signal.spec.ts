import { WakeSignal } from '../wake-signal.js';

describe(WakeSignal.name, () => {
  it('ends every pending sleep at wake(), long before its timeout', async () => {
    const signal = new WakeSignal();
    const started = Date.now();
    const sleeps = Promise.all([signal.sleep(10_000), signal.sleep(10_000)]);
    signal.wake();
    // Each says it was woken, so a worker waiting for a moment knows new work came first.
    expect(await sleeps).toEqual([true, true]);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('ends a sleep at its timeout with no wake, and forgets it (an idle poll loop does not grow the list)', async () => {
    const signal = new WakeSignal();
    for (let i = 0; i < 5; i++) expect(await signal.sleep(5)).toBe(false);
    expect((signal as unknown as { waiters: unknown[] }).waiters).toHaveLength(0);
  });
});
