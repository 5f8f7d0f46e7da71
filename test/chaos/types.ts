/**
 * The chaos harness's shared shapes (issue 17): the platform under test (`platform.ts`), the faults
 * it suffers (`faults.ts`), the workload and its ledger (`workload.ts`), and the reconciliation
 * that judges the run (`reconcile.ts`). `main.ts` (`npm run chaos`) and `chaos.e2e-spec.ts` (the
 * short fixed-seed run in `npm test`) put them together.
 */

/** A seeded source of randomness: the same seed gives the same run. */
export interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** True with probability `p`. */
  chance(p: number): boolean;
}

/** Every kind of fault the harness injects; the report counts each. */
export type FaultKind =
  | 'process_kill' // SIGKILL of one service process, restarted after a pause
  | 'broker_cut_one' // one service's AMQP connections cut for seconds
  | 'broker_cut_all' // every service's AMQP connections cut for seconds
  | 'database_cut' // one service's PostgreSQL connections cut for seconds
  | 'provider_timeout_after_accept'
  | 'provider_timeout_before_accept'
  | 'provider_5xx'
  | 'provider_rate_limited' // Meta 131056 with Retry-After
  | 'provider_slow'
  | 'webhook_duplicate' // a status/inbound webhook delivered twice
  | 'webhook_late' // delivered after a delay
  | 'webhook_out_of_order'; // e.g. read before delivered before sent

/** What the workload needs to drive the platform: only public surfaces. */
export interface ChaosTarget {
  /** The gateway's base URL, e.g. http://127.0.0.1:41234 (no trailing slash). */
  gatewayUrl: string;
  /** The sandbox's base URL (providers + control API). */
  sandboxUrl: string;
  /** An all-scopes API key (bearer secret) of the run's organization, made by an admin. */
  apiKey: string;
  organizationId: string;
  /** The seed of the run, printed in the report to replay it. */
  seed: number;
}

/** A message parked in a service's dead-letter queue after the drain (the admin CLI's `dlq:list`). */
export interface ParkedMessage {
  service: string;
  event_id: string;
  type: string;
  reason: string | null;
  error: string | null;
}

/** One send the platform was asked for, as the workload recorded it. */
export interface LedgerEntry {
  /** Our own id for the ask (unique per run). */
  ref: string;
  kind: 'followup' | 'outreach' | 'notification' | 'operator_send';
  channel: 'whatsapp' | 'email' | 'linkedin';
  /** The recipient (E.164 phone, email address or provider id) as the wire will show it. */
  to: string;
  /** The ids the platform answered with, when it answered (enrollment, message, outbox entry…). */
  ids: Record<string, string>;
  /** Epoch ms when the ask was made. */
  askedAt: number;
  /** A stop event the workload caused for this ask (reply, opt-out, reject, cancel) and when (epoch ms). */
  stop?: { kind: string; at: number };
}

/** The final table of a run. Any non-zero violation count makes `npm run chaos` exit non-zero. */
export interface ChaosReport {
  seed: number;
  durationMs: number;
  faults: Partial<Record<FaultKind, number>>;
  /**
   * `asks`: ledger entries (one per send the workload asked for: a notification on two channels is
   * two); `asked`: the sends the platform's views show for them (a follow-up enrollment has one per
   * step it reached), split by outcome.
   */
  sends: { asks: number; asked: number; accepted: number; failed: number; cancelled: number; ambiguous: number };
  /** `deadLetters`: messages a service parked in its dead-letter queue (each one a step of some send or stop that never ran). */
  violations: { duplicates: number; lost: number; forbidden: number; pacing: number; stuck: number; deadLetters: number };
  /** One line per violation, enough to find it (ids, times). */
  details: string[];
  /**
   * Processes that crashed on their own or did not come back after a fault (filled by `main.ts`
   * from the platform; their lines are in `details`). Non-zero fails the run like a violation.
   */
  crashes?: number;
  /**
   * The fingerprint of the run's schedules (`scheduleFingerprint`): the same seed, duration, rates
   * and replicas give the same hash and counts on any machine, so a replay can be compared.
   */
  schedule?: { hash: string; asks: Record<string, number>; faults: Record<string, number> };
  /**
   * Lines about what was seen but not counted: a send that started while the stop that rules it out
   * was still on its way to the send lane (reconcile.ts `STOP_PROPAGATION_MS`).
   */
  notJudged?: string[];
}
