import { interruptHandler, signalExitCode, Teardown } from './interrupt.js';

/** A promise and the function that resolves it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe(Teardown.name, () => {
  describe('run', () => {
    it('runs every step once, newest first, however often it is called', async () => {
      const calls: string[] = [];
      const sut = new Teardown();
      sut.add('platform', () => calls.push('platform'));
      sut.add('faults', () => calls.push('faults'));
      await Promise.all([sut.run(), sut.run()]);
      await sut.run();
      expect(calls).toEqual(['faults', 'platform']);
      expect(sut.started).toBe(true);
    });

    it('skips a step removed before it runs', async () => {
      const calls: string[] = [];
      const sut = new Teardown();
      sut.add('platform', () => calls.push('platform'));
      const remove = sut.add('faults', () => calls.push('faults'));
      remove();
      remove();
      await sut.run();
      expect(calls).toEqual(['platform']);
    });

    it('logs a step that throws and still runs the next one', async () => {
      const lines: string[] = [];
      const calls: string[] = [];
      const sut = new Teardown((l) => lines.push(l));
      sut.add('platform', () => calls.push('platform'));
      sut.add('faults', () => Promise.reject(new Error('sandbox gone')));
      await sut.run();
      expect(calls).toEqual(['platform']);
      expect(lines).toEqual(['teardown: faults failed: sandbox gone']);
    });
  });
});

describe(interruptHandler.name, () => {
  it('tears down once and exits 130 after a SIGINT, when the teardown is done', async () => {
    const stopped = gate();
    const exits: number[] = [];
    let stops = 0;
    const teardown = new Teardown();
    teardown.add('platform', async () => {
      stops++;
      await stopped.promise;
    });
    const lines: string[] = [];
    const sut = interruptHandler({ teardown, log: (l) => lines.push(l), exit: (c) => exits.push(c), leftovers: () => 'schemas t_chaos_abc_*' });
    sut('SIGINT');
    await settle();
    expect(stops).toBe(1);
    expect(exits).toEqual([]);
    stopped.open();
    await settle();
    expect(exits).toEqual([130]);
    expect(lines[0]).toMatch(/^SIGINT: stopping the faults and the platform.*SIGINT again exits at once\. schemas t_chaos_abc_\*$/);
  });

  it('exits at once on a second signal, without a second teardown', async () => {
    const exits: number[] = [];
    let stops = 0;
    const teardown = new Teardown();
    teardown.add('platform', () => {
      stops++;
      return new Promise(() => undefined); // hangs, as a stop that waits on a dead server would
    });
    const lines: string[] = [];
    const order: string[] = [];
    const sut = interruptHandler({ teardown, log: (l) => lines.push(l), exit: (c) => (exits.push(c), order.push('exit')), abandon: () => order.push('abandon') });
    sut('SIGTERM');
    expect(order).toEqual([]);
    sut('SIGINT');
    await settle();
    expect(stops).toBe(1);
    expect(exits).toEqual([130]);
    expect(order).toEqual(['abandon', 'exit']);
    expect(lines[1]).toBe('SIGINT again: exiting now, the teardown unfinished.');
  });

  it('still exits on a second signal when abandoning throws', () => {
    const exits: number[] = [];
    const lines: string[] = [];
    const teardown = new Teardown();
    teardown.add('platform', () => new Promise(() => undefined));
    const sut = interruptHandler({
      teardown,
      log: (l) => lines.push(l),
      exit: (c) => exits.push(c),
      abandon: () => {
        throw new Error('no such process');
      },
    });
    sut('SIGINT');
    sut('SIGINT');
    expect(exits).toEqual([130]);
    expect(lines.at(-1)).toBe('abandoning failed: no such process');
  });

  it('exits 143 after a SIGTERM', async () => {
    const exits: number[] = [];
    const sut = interruptHandler({ teardown: new Teardown(), log: () => undefined, exit: (c) => exits.push(c) });
    sut('SIGTERM');
    await settle();
    expect(exits).toEqual([143]);
  });
});

describe(signalExitCode.name, () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)('answers 128 + the number of %s', (signal, code) => {
    expect(signalExitCode(signal)).toBe(code);
  });
});
