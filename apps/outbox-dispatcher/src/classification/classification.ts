import type { OutboxClassification } from '@touchpoint/contracts';

/**
 * What the dispatcher does with a failed attempt, decided from the provider's error code and never
 * from the HTTP status alone (seed 004 "Error classification").
 */
export type FailureAction = 'retry' | 'fail' | 'park_ambiguous';

/** A classified failure: the class, what to do, and the minimum wait before a retry (ms). */
export interface Classified {
  classification: OutboxClassification;
  action: FailureAction;
  /** Floor of the retry delay (Retry-After, quality cooldown), ms; 0 when none. */
  floorMs: number;
  /** The account itself is restricted: log `outbox.whatsapp_account_restricted`. */
  accountRestricted: boolean;
}

/** How a wire attempt failed, as the transport saw it. */
export type WireFailure =
  /** The provider answered with an error status (and usually an error body with a code). */
  | { kind: 'http'; httpStatus: number; providerCode: number | null; retryAfterMs: number | null }
  /** No answer within the deadline, or the connection broke: the provider may have sent it. */
  | { kind: 'timeout' }
  | { kind: 'network' }
  /** Our own code failed before any request existed (no transport error): it never reached the provider. */
  | { kind: 'local' };

/**
 * WhatsApp Cloud API error codes → class (seed 004 "Error classification", codes verified by the
 * seed's authors against Meta's error-code page on 2026-08-03).
 */
export const WHATSAPP_ERROR_CLASSES: ReadonlyMap<number, OutboxClassification> = new Map<number, OutboxClassification>([
  [131056, 'rate_limited'], // per-pair throughput exceeded
  [130429, 'rate_limited'], // Cloud API throughput limit
  [80007, 'rate_limited'], // WABA rate limit
  [2, 'transient'],
  [4, 'transient'],
  [131000, 'transient'],
  [131016, 'transient'],
  [131057, 'transient'],
  [133004, 'transient'],
  [131064, 'quality_cooldown'], // quality messaging limit
  [131048, 'account_restricted'], // spam/quality restriction
  [368, 'account_restricted'],
  [130497, 'account_restricted'],
  [131031, 'account_restricted'],
  [131026, 'recipient_undeliverable'],
  // Expired or invalid access token: no message can leave until a person gives the sender a new token.
  [190, 'sender_unauthorized'],
]);

/** Classes worth another attempt. */
const RETRYABLE: ReadonlySet<OutboxClassification> = new Set(['rate_limited', 'transient', 'quality_cooldown']);

/**
 * Classifies a WhatsApp wire failure.
 * - a known code → its class (table above);
 * - an unknown code with a 4xx status → `permanent` ("other 4xx: malformed or refused");
 * - an unknown code with a 5xx status → `transient` (the server failed, it did not refuse);
 * - timeout / network → `ambiguous` (parked, never retried blindly);
 * - a local fault before any request → `local_execution`, permanent (it provably never left).
 * Retry-After is a floor for every retryable class; 131064 also has the quality cooldown floor.
 */
export function classifyWhatsAppFailure(failure: WireFailure, qualityCooldownMs: number): Classified {
  if (failure.kind === 'local') return { classification: 'local_execution', action: 'fail', floorMs: 0, accountRestricted: false };
  if (failure.kind === 'timeout' || failure.kind === 'network') {
    return { classification: 'ambiguous', action: 'park_ambiguous', floorMs: 0, accountRestricted: false };
  }
  const known = failure.providerCode === null ? undefined : WHATSAPP_ERROR_CLASSES.get(failure.providerCode);
  const classification: OutboxClassification = known ?? (failure.httpStatus >= 500 ? 'transient' : 'permanent');
  if (!RETRYABLE.has(classification)) {
    return { classification, action: 'fail', floorMs: 0, accountRestricted: classification === 'account_restricted' };
  }
  const retryAfter = failure.retryAfterMs ?? 0;
  const floorMs = classification === 'quality_cooldown' ? Math.max(retryAfter, qualityCooldownMs) : retryAfter;
  return { classification, action: 'retry', floorMs, accountRestricted: false };
}

/** Backoff settings (seed 004: base 10 s, ×2, cap 15 min, 5 attempts). */
export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

/**
 * Delay before the next attempt after attempt number `attempt` (1-based) failed, ms:
 * `min(base × 2^(attempt−1), cap)`, raised to `floorMs` when that is longer — Retry-After and the
 * quality cooldown are floors, not alternatives (seed 004).
 */
export function retryDelayMs(policy: BackoffPolicy, attempt: number, floorMs = 0): number {
  const exponential = Math.min(policy.baseMs * 2 ** Math.max(0, attempt - 1), policy.capMs);
  return Math.max(exponential, floorMs);
}

/**
 * Parses a Retry-After header (delta-seconds or an HTTP date) into ms from `now`; null when absent
 * or unreadable, 0 when the date is past.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}

/** The shared classification of the email and LinkedIn adapters; `refusals` are our local refusal codes (permanent). */
export function classifyProviderFailure(failure: WireFailure, refusals: number[]): Classified {
  const permanent: Classified = { classification: 'permanent', action: 'fail', floorMs: 0, accountRestricted: false };
  switch (failure.kind) {
    case 'timeout':
    case 'network':
      return { classification: 'ambiguous', action: 'park_ambiguous', floorMs: 0, accountRestricted: false };
    case 'local':
      return { classification: 'local_execution', action: 'fail', floorMs: 0, accountRestricted: false };
    case 'http':
      if (failure.providerCode !== null && refusals.includes(failure.providerCode)) return permanent;
      if (failure.httpStatus === 429) return { classification: 'rate_limited', action: 'retry', floorMs: failure.retryAfterMs ?? 0, accountRestricted: false };
      if (failure.httpStatus >= 500) return { classification: 'transient', action: 'retry', floorMs: failure.retryAfterMs ?? 0, accountRestricted: false };
      return permanent;
  }
}
