/** What an IntervalTask runs, how often, and who hears of a failed tick. */
export interface IntervalTaskOptions {
  /** Time between the starts of two ticks, ms (a tick still running makes the next one skip); 0 or less: the task never starts. */
  everyMs: number;
  /** One tick: a sweep pass. */
  run: () => Promise<unknown>;
  /** Hears the error of a tick that threw or rejected (log it, count it); the next tick runs as usual. */
  onError: (err: Error) => void;
}

/**
 * A periodic sweep inside one process: `run` every `everyMs`, with the three rules every sweep of
 * the platform keeps —
 * - **crash**: a tick that throws is handed to `onError` and the next tick runs on time;
 * - **overlap**: a tick never starts while the previous one runs (that period is skipped, not queued);
 * - **stop**: `stop()` clears the timer and waits for the tick in progress; owners call it from
 *   `onModuleDestroy`, so the tick ends before the bus and the database close.
 * The timer is unref'd: it never keeps the process alive. Work across replicas is kept apart by the
 * tick itself (an advisory lock, SKIP LOCKED), not here.
 *
 * Why our own and not `@nestjs/schedule`: its `@Interval(ms)` fixes the period at decoration time,
 * while ours come from validated config where 0 means off; its dynamic `SchedulerRegistry.addInterval`
 * is a bare `setInterval` (an async tick slower than the period overlaps the next), its shutdown
 * does not wait for the tick in progress, and its errors go to Nest's logger without our event
 * names. Each of those would need this same wrapper around it.
 *
 * For work that runs back to back while there is any (release, triggers, returns), see PollLoop.
 */
export class IntervalTask {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;

  constructor(private readonly options: IntervalTaskOptions) {}

  /** Starts ticking (the first tick one period from now); a second call, or `everyMs` ≤ 0, does nothing. */
  start(): void {
    if (this.options.everyMs <= 0 || this.timer) return;
    this.timer = setInterval(() => this.tick(), this.options.everyMs);
    this.timer.unref();
  }

  /** Stops ticking and resolves once the tick in progress (if any) has ended; never rejects. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.current;
  }

  private tick(): void {
    if (this.current) return;
    this.current = Promise.resolve()
      .then(() => this.options.run())
      .then(
        () => undefined,
        (err: unknown) => this.options.onError(err instanceof Error ? err : new Error(String(err))),
      )
      .finally(() => {
        this.current = undefined;
      });
  }
}
