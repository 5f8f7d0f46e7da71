import { Injectable } from '@nestjs/common';

/**
 * The clock, injected wherever a rule depends on time (STYLE: time-dependent rules take `now`),
 * so tests can stand at any instant.
 */
@Injectable()
export class Clock {
  /** Current instant (UTC Date). */
  now(): Date {
    return new Date();
  }
}

/** A clock a test moves by hand. */
export class FixedClock extends Clock {
  constructor(private current: Date) {
    super();
  }
  override now(): Date {
    return new Date(this.current.getTime());
  }
  set(at: Date): void {
    this.current = at;
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

/** Sleeps `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
export * from './send-window.js';
export * from './service-window.js';
