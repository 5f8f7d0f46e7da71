import { Injectable } from '@nestjs/common';

/**
 * Wakes idle workers of this process early (new work arrived here). A hint only: workers poll
 * anyway, so a wake-up nobody waits for is simply dropped. Injectable: a service that provides it
 * once has one signal for all its poll loops (followups: an enrollment became due now — enrolled,
 * advanced, woken by a reply, or a wake-up message arrived); `new WakeSignal()` gives a worker its own.
 */
@Injectable()
export class WakeSignal {
  private waiters: (() => void)[] = [];

  /** Resolves at the next `wake()` (with true) or after `ms` (with false), whichever comes first. */
  sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter = () => {
        clearTimeout(timer);
        resolve(true);
      };
      // A sleep that ran out leaves the list: an idle worker must not grow it once a poll.
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, ms);
      this.waiters.push(waiter);
    });
  }

  /** Ends every pending `sleep` now. */
  wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
