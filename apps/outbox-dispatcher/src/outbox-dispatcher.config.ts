import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, Min, Secret, ServiceConfig } from '@touchpoint/config';

/**
 * Environment of the outbox-dispatcher service; see libs/config for the shared variables. The
 * numbers of seed 004 ("Outbound WhatsApp outbox & dispatcher") are the defaults.
 */
export class OutboxDispatcherConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  override PORT = 3104;

  /**
   * Key that encrypts sender credentials at rest (AES-256-GCM): 32 bytes, base64. The default is
   * for a developer machine only; set a secret one anywhere else.
   */
  @Matches(/^[A-Za-z0-9+/]{43}=$/, { message: 'must be 32 bytes in base64' })
  @Secret()
  OUTBOX_CREDENTIALS_KEY = 'ZGV2ZWxvcG1lbnQtb25seS1rZXktMzItYnl0ZXMhISE=';

  /**
   * Deadline of the provider read that proves a new sender's credential owns its id (Graph phone
   * number, Nylas grant, Unipile account), ms. Keep it under the gateway's RPC_TIMEOUT_MS, or the
   * caller is told 503 while the sender is still being added.
   */
  @IsInt()
  @Min(100)
  @Max(60_000)
  SENDER_VERIFY_TIMEOUT_MS = 3000;

  /** Base URL of the WhatsApp Cloud API (Graph); the sandbox on a developer machine. */
  @Matches(/^https?:\/\/[^/]+/, { message: 'must be an http(s) URL' })
  WHATSAPP_GRAPH_BASE_URL = 'http://127.0.0.1:3900';

  /** Graph API version in the request path. */
  @Matches(/^v\d+\.\d+$/, { message: 'must look like v23.0' })
  WHATSAPP_GRAPH_VERSION = 'v23.0';

  /** Deadline of one send (or media upload) HTTP call, ms; past it the outcome is unknown. */
  @IsInt()
  @Min(100)
  @Max(120_000)
  WHATSAPP_SEND_TIMEOUT_MS = 15_000;

  /** Minimum time between two attempt starts on one (sender, recipient) pair, ms (seed 004 "Pacing"). */
  @IsInt()
  @Min(1000)
  @Max(600_000)
  WHATSAPP_PAIR_MIN_SEND_INTERVAL_MS = 6500;

  /** First retry delay, ms; doubles per attempt (seed 004 "Error classification"). */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  OUTBOX_BACKOFF_BASE_MS = 10_000;

  /** Largest retry delay, ms (seed 004). */
  @IsInt()
  @Min(1000)
  @Max(86_400_000)
  OUTBOX_BACKOFF_CAP_MS = 900_000;

  /** Attempts of an entry in total (seed 004); read receipts always get one. */
  @IsInt()
  @Min(1)
  @Max(50)
  OUTBOX_MAX_ATTEMPTS = 5;

  /** Floor of the retry delay after 131064 (quality messaging limit): the seed's "long cooldown", ms. */
  @IsInt()
  @Min(1000)
  @Max(86_400_000)
  WHATSAPP_QUALITY_COOLDOWN_MS = 3_600_000;

  /**
   * How long a business number's sends wait after Meta reports an asynchronous rate-limit error
   * for it in a webhook's `value.errors[]` (130429 throughput, 80007 account limit; no Retry-After
   * comes with those), ms.
   */
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  WHATSAPP_ASYNC_RATE_LIMIT_PAUSE_MS = 60_000;

  /** How long a claim on a pair lasts, ms; must exceed the send timeout with margin. */
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  OUTBOX_LEASE_MS = 60_000;

  /** Pairs one process works on at once (sends in flight, at most one per pair). */
  @IsInt()
  @Min(1)
  @Max(512)
  OUTBOX_DISPATCH_CONCURRENCY = 32;

  /**
   * Most pairs one claim statement takes (their attempts open in the same transaction); the drain
   * claims when this many of its OUTBOX_DISPATCH_CONCURRENCY slots are free, or any when idle.
   */
  @IsInt()
  @Min(1)
  @Max(200)
  OUTBOX_CLAIM_BATCH = 16;

  /**
   * How long a queued send marked `stop_on_reply` (a cancel_on_reply follow-up)
   * waits after its recipient wrote, counted from messaging's acknowledgement, ms; 0 = no hold.
   * The requester judges the message a reply and cancels in two or three bus hops after that
   * acknowledgement, unbounded under load (a chaos run saw 10 s with no fault); this bounds the wait the
   * requester gets. Longer delays a held send that nobody cancels (an auto-reply, a send that does
   * not stop after all) by as much. A claimed send is never held (DESIGN §5.3).
   */
  @IsInt()
  @Min(0)
  @Max(300_000)
  OUTBOX_REPLY_HOLD_MS = 20_000;

  /** Whether the process drains continuously (off in tests that drive the drain by hand). */
  @IsBoolean()
  OUTBOX_DRAIN_AUTOSTART = true;

  /** Longest the idle drain sleeps before it looks again without any wake-up, ms (the timer backstop). */
  @IsInt()
  @Min(50)
  @Max(600_000)
  OUTBOX_IDLE_POLL_MS = 2000;

  /** Period of the sweep (lease recovery, backstop drain, age warning, pruning), ms; 0 = off. */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  OUTBOX_SWEEP_INTERVAL_MS = 60_000;

  /** Time budget of the sweep's own drain, ms. */
  @IsInt()
  @Min(100)
  @Max(600_000)
  OUTBOX_SWEEP_DRAIN_BUDGET_MS = 20_000;

  /** Age of the oldest due entry above which the sweep warns, ms. */
  @IsInt()
  @Min(1000)
  OUTBOX_PENDING_AGE_ALERT_MS = 300_000;

  /** Days an accepted entry is kept (seed 004: 30). */
  @IsInt()
  @Min(1)
  OUTBOX_ACCEPTED_RETENTION_DAYS = 30;

  /** Days a failed or cancelled entry is kept (seed 004: 90). Ambiguous entries are never pruned. */
  @IsInt()
  @Min(1)
  OUTBOX_FAILED_RETENTION_DAYS = 90;

  /** Name of this process in lease rows; default host:pid:random. */
  @IsOptional()
  @IsString()
  OUTBOX_INSTANCE_ID?: string = undefined;

  /** Nylas v3 API base URL (the sandbox locally; https://api.us.nylas.com in production). */
  @IsString()
  NYLAS_API_BASE_URL = 'http://127.0.0.1:3900';

  /** Deadline of one Nylas call, ms; a send that passes it is parked ambiguous, never resent blindly. */
  @IsInt()
  @Min(100)
  @Max(120_000)
  NYLAS_SEND_TIMEOUT_MS = 15_000;

  /** Unipile API base URL (the sandbox locally; the account's DSN in production). */
  @IsString()
  UNIPILE_API_BASE_URL = 'http://127.0.0.1:3900';

  /** Deadline of one Unipile call, ms. */
  @IsInt()
  @Min(100)
  @Max(120_000)
  UNIPILE_SEND_TIMEOUT_MS = 15_000;

  /** Key of the signed unsubscribe tokens (the gateway verifies them with the same key). */
  @IsString()
  @Secret()
  UNSUBSCRIBE_TOKEN_SECRET = 'sandbox-unsubscribe-token-secret';

  /** Public base URL of the gateway, for the unsubscribe link and List-Unsubscribe header. */
  @IsString()
  UNSUBSCRIBE_BASE_URL = 'http://127.0.0.1:3000';
}
