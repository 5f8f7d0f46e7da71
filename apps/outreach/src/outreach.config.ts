import { IsBoolean, IsInt, Max, Min, ServiceConfig } from '@touchpoint/config';

/** Environment of the outreach service; see libs/config for the shared variables. */
export class OutreachConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  override PORT = 3102;

  /**
   * Whether this process runs the runner loops (a replica that only serves the API can turn them
   * off; its bus handlers still record runs for the others).
   */
  @IsBoolean()
  OUTREACH_RUNNER_ENABLED = true;

  /** How often an idle runner loop looks for queued runs, ms (a bus handler also wakes it). */
  @IsInt()
  @Min(10)
  @Max(60_000)
  OUTREACH_RUNNER_POLL_MS = 1000;

  /** Runs one process executes at once (decision and execution together). */
  @IsInt()
  @Min(1)
  @Max(64)
  OUTREACH_RUNNER_CONCURRENCY = 4;

  /**
   * Decision runs of one organization running at once, across every replica (seed 003 §3: a
   * concurrency key on organization_id caps the decision workflow).
   */
  @IsInt()
  @Min(1)
  @Max(64)
  OUTREACH_DECISION_CONCURRENCY_PER_ORG = 2;

  /**
   * A claimed run is someone else's to take over after this, ms. The runner renews it every third
   * of it while the run works (a model call may take longer), so it only lapses when its process
   * died or lost its database: this is how long a run a killed process held waits.
   */
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  OUTREACH_RUN_LEASE_MS = 30_000;

  /** Attempts of a run before it fails for good (then: decision error, next check in a day). */
  @IsInt()
  @Min(1)
  @Max(20)
  OUTREACH_RUN_MAX_ATTEMPTS = 5;

  /** First retry delay of a failed run step, ms; doubles on each attempt. */
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  OUTREACH_RUN_RETRY_BASE_MS = 2000;

  /** Deadline of one model call (`ai.run` timeout_ms), ms. */
  @IsInt()
  @Min(1000)
  @Max(120_000)
  OUTREACH_AI_TIMEOUT_MS = 30_000;

  /** Deadline of each context read but the required one (seed 003 §4.2: 2 s), ms. */
  @IsInt()
  @Min(100)
  @Max(30_000)
  OUTREACH_CONTEXT_READ_TIMEOUT_MS = 2000;

  /** How often the due sweep runs, ms (seed 003 §4.7: every 5 minutes); 0 turns it off in this process. */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  OUTREACH_SWEEP_INTERVAL_MS = 300_000;
}
