/**
 * What `npm run chaos` does on Ctrl-C or a SIGTERM: a run owns schemas, a `test_namespaces` row,
 * broker queues and exchanges, and a dozen child processes, and an exit that skips its teardown
 * leaves them all on the machine's shared servers.
 */
import { constants } from 'node:os';

/** Steps that undo what a run set up, run once, newest first (the faults stop before the platform does). */
export class Teardown {
  private readonly steps: { name: string; fn: () => Promise<unknown> | unknown }[] = [];
  private running?: Promise<void>;

  constructor(private readonly log: (line: string) => void = () => undefined) {}

  /** Adds a step; answers a function that removes it (the run undid it on its own). */
  add(name: string, fn: () => Promise<unknown> | unknown): () => void {
    const step = { name, fn };
    this.steps.push(step);
    return () => {
      const i = this.steps.indexOf(step);
      if (i >= 0) this.steps.splice(i, 1);
    };
  }

  /** Whether `run` was called. */
  get started(): boolean {
    return this.running !== undefined;
  }

  /**
   * Runs every step once, newest first; a step that throws is logged and the next one still runs.
   * Calling it again answers the first call's promise.
   */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.fn();
        } catch (err) {
          this.log(`teardown: ${step.name} failed: ${(err as Error).message}`);
        }
      }
    })();
    return this.running;
  }
}

/** The shell's exit status for a process ended by `signal`: 128 + its number (SIGINT 130, SIGTERM 143). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

export interface InterruptHandlerOptions {
  teardown: Teardown;
  log: (line: string) => void;
  exit: (code: number) => void;
  /**
   * Called on the second signal, just before the exit: what must not outlive the harness even
   * unfinished (the service processes, SIGKILLed: one that got the first teardown's SIGTERM may
   * never finish shutting down once its proxies are gone, and then ignores its guard's SIGTERM).
   */
  abandon?: () => void;
  /** Appended to both log lines: what an operator drops by hand when the teardown does not finish. */
  leftovers?: () => string;
}

/**
 * The handler for SIGINT and SIGTERM: the first signal runs the teardown, then exits 128 + the
 * signal's number; a second one (the teardown hangs, or the operator is in a hurry) exits at once.
 */
export function interruptHandler(o: InterruptHandlerOptions): (signal: NodeJS.Signals) => void {
  let first: NodeJS.Signals | undefined;
  return (signal) => {
    const where = o.leftovers ? ` ${o.leftovers()}` : '';
    if (first) {
      o.log(`${signal} again: exiting now, the teardown unfinished.${where}`);
      try {
        o.abandon?.();
      } catch (err) {
        o.log(`abandoning failed: ${(err as Error).message}`);
      }
      o.exit(signalExitCode(signal));
      return;
    }
    first = signal;
    o.log(`${signal}: stopping the faults and the platform (its processes, schemas and bus namespace); ${signal} again exits at once.${where}`);
    void o.teardown.run().then(() => {
      o.log('teardown done');
      o.exit(signalExitCode(signal));
    });
  };
}
