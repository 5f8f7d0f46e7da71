import { IsBoolean, IsInt, Max, Min, ServiceConfig } from '@touchpoint/config';

/** Environment of the followups service; see libs/config for the shared variables. */
export class FollowupsConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  override PORT = 3101;

  /** Whether this process runs the release loop (an API-only replica sets false). */
  @IsBoolean()
  FOLLOWUP_RELEASE_ENABLED = true;

  /** Release workers in this process, each one transaction at a time (DESIGN §9: claims scale with concurrency). */
  @IsInt()
  @Min(1)
  @Max(64)
  FOLLOWUP_RELEASE_CONCURRENCY = 4;

  /**
   * Due enrollments one release transaction may claim (group commit: one claim, one outbox insert
   * and one commit for all of them; each still moves one step, see ReleaseService.releaseBatch).
   * 1 releases one enrollment per transaction.
   */
  @IsInt()
  @Min(1)
  @Max(200)
  FOLLOWUP_RELEASE_BATCH = 16;

  /** Poll interval of an idle release worker, ms (seed 000 "loops poll every second"); a worker sleeps less when a step its process wrote is due sooner (a number's pacing gap). */
  @IsInt()
  @Min(50)
  @Max(5000)
  FOLLOWUP_POLL_MS = 1000;

  /** Failures of one enrollment's step before it is marked `dead` (seed 000 `FOLLOWUP_MAX_FAILURES`). */
  @IsInt()
  @Min(1)
  @Max(100)
  FOLLOWUP_MAX_FAILURES = 8;

  /**
   * Gap between two follow-up releases on one sending number, ms (seed 000 "pacing += sendDelayMs");
   * 0 turns per-number pacing off (the dispatcher still paces each recipient pair).
   */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  FOLLOWUP_SENDER_GAP_MS = 250;

  /**
   * Follow-up sends one number may have in flight — queued, not yet accepted or refused by the
   * provider (seed 000 "window of follow-up messages QUEUED/PROCESSING per number"); a release
   * beyond it is deferred by FOLLOWUP_SENDER_BACKLOG_RETRY_MS instead of piling up the outbox.
   * 0 turns the window off.
   */
  @IsInt()
  @Min(0)
  @Max(100_000)
  FOLLOWUP_SENDER_INFLIGHT_WINDOW = 100;

  /** How much later a release deferred by a full in-flight window tries again, ms (seed 000 "backlog → defer"). */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  FOLLOWUP_SENDER_BACKLOG_RETRY_MS = 5000;

  /**
   * Whether AI steps (`ai_classify`, AI-written actions) may be published; false makes publishing
   * them answer 422 `invalid_graph` / `ai_step_unavailable` (an installation without ai-gateway).
   */
  @IsBoolean()
  FOLLOWUP_AI_STEPS_ENABLED = true;

  /** Deadline of the RPC a tag/untag step makes to messaging, ms. */
  @IsInt()
  @Min(100)
  @Max(30_000)
  FOLLOWUP_ACTION_RPC_TIMEOUT_MS = 3000;

  /** Whether this process fires due one-off returns (seed 002 "Retornos avulsos"); follows the release loop's switch when unset. */
  @IsBoolean()
  FOLLOWUP_PROMISES_ENABLED = true;

  /**
   * Lease of a model call (AI step or return resumption), ms (seed 000 `FOLLOWUP_AI_LEASE_MS`): a
   * worker that dies mid-call leaves the row to another after this long.
   */
  @IsInt()
  @Min(1000)
  @Max(600_000)
  FOLLOWUP_AI_LEASE_MS = 60_000;

  /** Provider deadline of those model calls, ms (below the lease, so a live worker finishes first). */
  @IsInt()
  @Min(1000)
  @Max(120_000)
  FOLLOWUP_AI_TIMEOUT_MS = 20_000;

  /** Whether this process runs the rule trigger loop (seed 000 "Rules"); off with the release loop. */
  @IsBoolean()
  FOLLOWUP_TRIGGERS_ENABLED = true;

  /** Whether this process runs bulk enrollment jobs; off with the release loop. */
  @IsBoolean()
  FOLLOWUP_BULK_ENABLED = true;

  /** Contacts a bulk job enrolls per transaction (one cursor move). */
  @IsInt()
  @Min(1)
  @Max(1000)
  FOLLOWUP_BULK_CHUNK = 100;

  /** Lease of a running bulk job, ms: a worker that dies leaves the job to another after this long. */
  @IsInt()
  @Min(1000)
  @Max(600_000)
  FOLLOWUP_BULK_LEASE_MS = 60_000;

  /**
   * Claims of a bulk job without one chunk going through (a chunk that throws, or a worker that
   * dies mid-chunk) before the job ends `failed` with its last error; each such retry waits for the
   * lease (FOLLOWUP_BULK_LEASE_MS) to run out. Like the rule triggers' "given up after 5 attempts" (seed 000 "Rules").
   */
  @IsInt()
  @Min(1)
  @Max(100)
  FOLLOWUP_BULK_MAX_ATTEMPTS = 5;

  /** Interval of the retention pass, ms (seed 000 "Retention": daily); 0 turns the in-process schedule off (the CronJob runs it). */
  @IsInt()
  @Min(0)
  @Max(7 * 86_400_000)
  FOLLOWUP_RETENTION_INTERVAL_MS = 86_400_000;
}
