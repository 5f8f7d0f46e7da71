import { IsIn, IsInt, IsString, Max, Min, ServiceConfig } from '@touchpoint/config';

/** Environment of the messaging service; see libs/config for the shared variables. */
export class MessagingConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  override PORT = 3103;

  /** Deadline of the `abuse.check` RPC, ms; past it the fail-open/fail-closed rule applies (seed 004). */
  @IsInt()
  @Min(50)
  @Max(30_000)
  ABUSE_CHECK_TIMEOUT_MS = 2000;

  /**
   * Deadline of the `abuse.restrictions.active` RPC, ms: when the check failed, messaging asks the
   * abuse service for the block in force before it falls back to its own event-fed copy (seed 004
   * "When the Check Itself Fails").
   */
  @IsInt()
  @Min(50)
  @Max(30_000)
  ABUSE_STATE_TIMEOUT_MS = 1000;

  /** Inbound receipts claimed per worker pass (the webhook is acknowledged on the receipt; the worker stores the message). */
  @IsInt()
  @Min(1)
  @Max(1000)
  INBOUND_BATCH = 64;

  /**
   * Senders whose receipts one worker processes at once (a sender's own messages go one by one, in
   * order). Their abuse checks leave together, one `abuse.check_batch` call per round, so this is
   * also the most checks a call carries: as many as a batch has senders makes one call per round.
   */
  @IsInt()
  @Min(1)
  @Max(1000)
  INBOUND_CONCURRENCY = 64;

  /** How long a claimed receipt is held by its worker before another may take it (a crashed worker's lease), ms. */
  @IsInt()
  @Min(1000)
  @Max(600_000)
  INBOUND_LEASE_MS = 30_000;

  /** How often an idle receipt worker looks for due receipts, ms (a new receipt wakes it at once; 0 turns the worker off). */
  @IsInt()
  @Min(0)
  @Max(60_000)
  INBOUND_POLL_MS = 1000;

  /** Longest wait before a failed receipt is tried again, ms (the wait doubles from 1 s up to this). */
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  INBOUND_RETRY_MAX_MS = 300_000;

  /** How often idle instances are closed and missing summaries retried, ms (seed 004: hourly; 0 disables). */
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  INSTANCE_SWEEP_INTERVAL_MS = 3_600_000;

  /**
   * How often the outcome sweep runs, ms (0 turns it off). It re-reads from the dispatcher the
   * outcomes that never reached their message, settles notification deliveries a terminal
   * message left pending, and prunes statuses that never matched a message (seed 004 "Dispatch is
   * woken …, drained by cron": the every-minute recovery work).
   */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  OUTCOME_SWEEP_INTERVAL_MS = 60_000;

  /**
   * How long an outbound message may wait in `queued`/`ambiguous` (and a notification delivery in
   * `pending` behind a settled message) before the outcome sweep asks the dispatcher, ms (seed 004
   * MESSAGE_OUTBOX_PERSISTENCE_GRACE_MS). Longer than the bus normally takes to deliver an outcome,
   * so the sweep repairs only what the events left undone. A message still in flight is asked
   * about again at most once per grace.
   */
  @IsInt()
  @Min(1000)
  @Max(86_400_000)
  OUTBOX_PERSISTENCE_GRACE_MS = 120_000;

  /**
   * How long a provider status that matched no message is kept, ms, before the outcome sweep
   * deletes it (statuses for messages sent outside the platform never match). Keep it well above
   * OUTBOX_PERSISTENCE_GRACE_MS: a status that arrives before its message knows the provider id
   * waits here until the outcome reaches the message.
   */
  @IsInt()
  @Min(600_000)
  @Max(90 * 86_400_000)
  PENDING_STATUS_TTL_MS = 7 * 86_400_000;

  /** Messages the outcome sweep asks the dispatcher about, and deliveries it repairs, per pass. */
  @IsInt()
  @Min(1)
  @Max(500)
  OUTCOME_SWEEP_BATCH = 200;

  /** `on`: closed instances are summarized through ai-gateway; `off`: they wait in `closed`. */
  @IsIn(['on', 'off'])
  SUMMARIES = 'on';

  /** Provider deadline of one summary run through ai-gateway, ms. */
  @IsInt()
  @Min(1000)
  @Max(120_000)
  SUMMARY_TIMEOUT_MS = 20_000;

  /** How long the real-time feed keeps items for `Last-Event-ID` resume, ms. */
  @IsInt()
  @Min(60_000)
  @Max(7 * 86_400_000)
  STREAM_RETENTION_MS = 3_600_000;

  /** The reply a restricted (blocked) contact gets instead of service (seed 004 "access-restricted message"). */
  @IsString()
  ACCESS_RESTRICTED_REPLY = 'Your access is temporarily restricted. Please try again later.';

  /** The reply to a first offense (seed 004 "Progressive Penalties": 1st offense, a warning). */
  @IsString()
  ABUSE_WARNING_REPLY = 'Please slow down: repeated or automated messages may restrict your access.';
}
