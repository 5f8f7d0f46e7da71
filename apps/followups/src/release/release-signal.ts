import { Injectable } from '@nestjs/common';

/**
 * Wakes idle release workers of this process early (an enrollment became due now: enrolled,
 * advanced, woken by a reply, or a wake-up message arrived). A hint only: workers poll anyway.
 */
@Injectable()
export class ReleaseSignal {
  private waiters: (() => void)[] = [];

  /** Resolves at the next `wake()` or after `ms`, whichever comes first. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const waiter = () => {
        clearTimeout(timer);
        resolve();
      };
      function done() {
        resolve();
      }
      this.waiters.push(waiter);
    });
  }

  wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
