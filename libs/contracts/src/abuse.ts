/**
 * Contract of the abuse service (DESIGN §4, seed 004 "Abuse Prevention Integration"): the rate and
 * pattern check messaging runs before it accepts an inbound message, and the penalty events that
 * messaging keeps as its read model of active restrictions.
 */

/** RPC patterns the abuse service answers. */
export const AbuseRpc = {
  /** `AbuseCheckData` → `AbuseVerdict`. */
  Check: 'abuse.check',
  /**
   * `AbuseCheckBatchData` → `AbuseCheckBatchAnswer`: several inbound messages checked as each would
   * be by `abuse.check`, in the order given (two of one conversation: the second counted after the
   * first), in one transaction where it can; one outcome per check, in order, a check the service
   * refused (`validation_failed`) answered by its error alone. Messaging's receipt worker sends the
   * checks of its senders that wait at the same time in one call.
   */
  CheckBatch: 'abuse.check_batch',
  /** `{ organization_id, contact_id?, active_only? }` → `{ items: AbuseActionView[] }`. */
  ListActions: 'abuse.actions.list',
  /**
   * `{ organization_id, contact_id }` → `{ restriction: AbuseActionView | null }`: the throttle or
   * block in force for the contact now (a block first), read from the abuse service's own
   * actions. Messaging asks it when `abuse.check` failed (seed 004 "When the Check Itself Fails");
   * throws `validation_failed`.
   */
  ActiveRestriction: 'abuse.restrictions.active',
  /** `{ organization_id? }` → `{ items: RateLimitConfigView[] }`. */
  ListConfig: 'abuse.config.list',
} as const;

/** Events the abuse service publishes. */
export const AbuseEvents = {
  /** `AbuseActionEventData`: a penalty was applied (warning, throttle or block). */
  ActionApplied: 'abuse.action.applied',
  /** `AbuseActionEventData`: a throttle or block reached its end. */
  ActionExpired: 'abuse.action.expired',
} as const;

/** Penalty kinds, mildest first (seed 004 "Progressive Penalties"). */
export const ABUSE_ACTION_TYPES = ['warning', 'throttle', 'block'] as const;
export type AbuseActionType = (typeof ABUSE_ACTION_TYPES)[number];

/** Patterns looked for every 5th message (seed 004 "Pattern Detection"). */
export const ABUSE_PATTERN_TYPES = ['spam', 'flooding', 'gibberish'] as const;
export type AbusePatternType = (typeof ABUSE_PATTERN_TYPES)[number];

/**
 * Which limit a denial came from. `instance` is not a rejection but the instruction to roll the
 * conversation over to a new instance (seed 004 "Instance Lifecycle").
 */
export type AbuseLimitType = 'minute' | 'hour' | 'day' | 'instance' | 'throttled' | 'blocked';

/** Data of `abuse.check`: one inbound message about to be accepted. */
export interface AbuseCheckData {
  organization_id: string;
  contact_id: string;
  conversation_id: string;
  /** The conversation's active instance and its current `message_count` (both directions). */
  instance_id: string;
  instance_message_count: number;
  channel: string;
  /** Rate-limit tier of the contact; unknown tiers use `all`. */
  user_type?: string;
  /** Provider id of the message (wamid): a repeated check of the same message is not counted twice. */
  message_ref: string;
  text: string | null;
  /** ISO-8601 instant the message was sent (provider timestamp), for flooding detection. */
  sent_at: string;
}

/** Data of `abuse.check_batch`: the checks, in the order their messages are judged. */
export interface AbuseCheckBatchData {
  checks: AbuseCheckData[];
}

/** One check's outcome in `abuse.check_batch`: its verdict, or the error `abuse.check` would have thrown. */
export type AbuseCheckOutcome = { verdict: AbuseVerdict } | { error: { code: string; message: string } };

/** Answer of `abuse.check_batch`: one outcome per check, in the order of `checks`. */
export interface AbuseCheckBatchAnswer {
  outcomes: AbuseCheckOutcome[];
}

/** Answer of `abuse.check`. */
export interface AbuseVerdict {
  allowed: boolean;
  limit_type: AbuseLimitType | null;
  /** When the limit lifts (ISO-8601); null for `instance` and for a warning. */
  reset_at: string | null;
  /** A penalty applied by this very message, if any. */
  action: AbuseActionView | null;
  /** Patterns found in this check (every 5th message). */
  patterns: AbusePatternType[];
}

/** A penalty as answers and events show it. */
export interface AbuseActionView {
  action_id: string;
  organization_id: string;
  contact_id: string;
  conversation_id: string | null;
  action_type: AbuseActionType;
  /** 1-based count of offenses in the last 30 days, this one included. */
  offense_number: number;
  reason: string;
  starts_at: string;
  /** ISO-8601; equal to `starts_at` for a warning (it restricts nothing). */
  expires_at: string;
  status: 'active' | 'expired';
}

/** Data of `abuse.action.applied | expired`. */
export interface AbuseActionEventData {
  action: AbuseActionView;
}

/** One row of `rate_limit_config`. */
export interface RateLimitConfigView {
  organization_id: string | null;
  channel: string;
  user_type: string;
  per_minute: number;
  per_hour: number;
  per_day: number;
  per_instance: number;
}
