import type { Tx } from '@touchpoint/database';
import type { UnitOfWork } from '@touchpoint/runtime';
import type { Clock } from '@touchpoint/time';
import type { RunKind, RunRowOf, RunsRepository } from './runs.repository.js';

/**
 * One execution of a run, with its steps memoised (DESIGN §6: a `workflow_steps` row per (run key,
 * step)): a step that completed returns its saved output on every retry of the run, so a retried
 * run never pays for a model call twice and never repeats a write.
 */
export class RunContext<K extends RunKind = RunKind> {
  constructor(
    readonly run: RunRowOf<K>,
    private readonly runs: RunsRepository,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
  ) {}

  get key(): string {
    return this.run.run_key;
  }

  /**
   * A step with no writes of its own (reads, a model call): runs `work` outside any transaction
   * (a slow model never holds a connection) and saves its output.
   */
  async step<T>(name: string, work: () => Promise<T>): Promise<T> {
    const saved = await this.uow.run((tx) => this.runs.memo(tx, this.key, name));
    if (saved) return saved.output as T;
    const output = await work();
    return (await this.uow.run((tx) => this.runs.saveMemo(tx, this.key, name, output, this.clock.now()))) as T;
  }

  /**
   * A step whose writes commit with its memo, in one transaction: it happens once per run or not
   * at all. Two runners on the same step wait for each other, and the second reads the memo.
   */
  async stepTx<T>(name: string, work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.uow.run(async (tx) => {
      await this.runs.lockStep(tx, this.key, name);
      const saved = await this.runs.memo(tx, this.key, name);
      if (saved) return saved.output as T;
      const output = await work(tx);
      return (await this.runs.saveMemo(tx, this.key, name, output, this.clock.now())) as T;
    });
  }
}

/** What the runner of kind `K` does with a claimed run. */
export interface RunHandler<K extends RunKind> {
  /** Runs (or resumes) the run; throwing retries it with backoff. */
  execute(ctx: RunContext<K>): Promise<void>;
  /** Called once when the run failed for good (attempts exhausted). */
  onFailure(run: RunRowOf<K>, error: string): Promise<void>;
}
