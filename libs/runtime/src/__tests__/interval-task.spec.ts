import { jest } from '@jest/globals';
import { IntervalTask } from '../interval-task.js';

/** A tick the test ends by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe(IntervalTask.name, () => {
  const EVERY_MS = 1000;
  let sut: IntervalTask | undefined;

  beforeEach(() => jest.useFakeTimers());
  afterEach(async () => {
    await sut?.stop();
    sut = undefined;
    jest.useRealTimers();
  });

  describe('start', () => {
    it('runs one tick per period, the first one period after start', async () => {
      const run = jest.fn(async (): Promise<unknown> => undefined);
      sut = new IntervalTask({ everyMs: EVERY_MS, run, onError: jest.fn() });
      sut.start();
      await jest.advanceTimersByTimeAsync(EVERY_MS - 1);
      expect(run).toHaveBeenCalledTimes(0);
      await jest.advanceTimersByTimeAsync(1);
      expect(run).toHaveBeenCalledTimes(1);
      await jest.advanceTimersByTimeAsync(2 * EVERY_MS);
      expect(run).toHaveBeenCalledTimes(3);
    });

    it.each([0, -1])('never ticks when everyMs is %d (the schedule is off)', async (everyMs) => {
      const run = jest.fn(async (): Promise<unknown> => undefined);
      sut = new IntervalTask({ everyMs, run, onError: jest.fn() });
      sut.start();
      await jest.advanceTimersByTimeAsync(10 * EVERY_MS);
      expect(run).not.toHaveBeenCalled();
    });

    it('does not start a second timer when called twice', async () => {
      const run = jest.fn(async (): Promise<unknown> => undefined);
      sut = new IntervalTask({ everyMs: EVERY_MS, run, onError: jest.fn() });
      sut.start();
      sut.start();
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      expect(run).toHaveBeenCalledTimes(1);
    });
  });

  describe('overlap', () => {
    it('skips the periods that pass while a tick still runs, then ticks again', async () => {
      const slow = gate();
      const run = jest.fn<() => Promise<unknown>>().mockReturnValueOnce(slow.promise).mockResolvedValue(undefined);
      sut = new IntervalTask({ everyMs: EVERY_MS, run, onError: jest.fn() });
      sut.start();
      await jest.advanceTimersByTimeAsync(4 * EVERY_MS);
      expect(run).toHaveBeenCalledTimes(1);
      slow.open();
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      expect(run).toHaveBeenCalledTimes(2);
    });
  });

  describe('crash', () => {
    it.each([
      ['rejects', () => Promise.reject(new Error('database down'))],
      [
        'throws synchronously',
        () => {
          throw new Error('database down');
        },
      ],
    ])('hands the error of a tick that %s to onError and runs the next tick on time', async (_, failing) => {
      const run = jest.fn<() => Promise<unknown>>().mockImplementationOnce(failing).mockResolvedValue(undefined);
      const onError = jest.fn<(err: Error) => void>();
      sut = new IntervalTask({ everyMs: EVERY_MS, run, onError });
      sut.start();
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      expect(onError).toHaveBeenCalledTimes(1);
      expect(onError.mock.calls[0]![0]).toEqual(new Error('database down'));
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      expect(run).toHaveBeenCalledTimes(2);
      expect(onError).toHaveBeenCalledTimes(1);
    });

    it('wraps a rejection that is not an Error', async () => {
      const onError = jest.fn<(err: Error) => void>();
      sut = new IntervalTask({ everyMs: EVERY_MS, run: () => Promise.reject('boom'), onError });
      sut.start();
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      expect(onError).toHaveBeenCalledWith(new Error('boom'));
    });
  });

  describe('stop', () => {
    it('waits for the tick in progress, then no tick runs again', async () => {
      const slow = gate();
      const run = jest.fn<() => Promise<unknown>>().mockReturnValueOnce(slow.promise).mockResolvedValue(undefined);
      sut = new IntervalTask({ everyMs: EVERY_MS, run, onError: jest.fn() });
      sut.start();
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      let stopped = false;
      const stopping = sut.stop().then(() => (stopped = true));
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      expect(stopped).toBe(false);
      slow.open();
      await stopping;
      expect(stopped).toBe(true);
      await jest.advanceTimersByTimeAsync(5 * EVERY_MS);
      expect(run).toHaveBeenCalledTimes(1);
    });

    it('resolves at once when no tick runs, and also when the last tick failed', async () => {
      const onError = jest.fn<(err: Error) => void>();
      sut = new IntervalTask({ everyMs: EVERY_MS, run: () => Promise.reject(new Error('x')), onError });
      sut.start();
      await jest.advanceTimersByTimeAsync(EVERY_MS);
      await expect(sut.stop()).resolves.toBeUndefined();
      expect(onError).toHaveBeenCalledTimes(1);
    });
  });
});
