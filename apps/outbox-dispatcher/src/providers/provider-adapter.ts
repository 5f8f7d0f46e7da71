import type { OutboxChannel, OutboxPayload } from '@touchpoint/contracts';
import type { Classified, WireFailure } from '../classification/classification.js';

/** A sender with its credentials decrypted, as an adapter needs it. Never logged. */
export interface SenderCredentials {
  senderId: string;
  organizationId: string;
  channel: OutboxChannel;
  status: 'connected' | 'disconnected';
  /** Why the dispatcher disconnected it by itself (`token_invalid` after a 190), else null. */
  statusReason?: string | null;
  phoneNumberId: string | null;
  displayPhoneNumber: string | null;
  businessAccountId: string | null;
  address: string | null;
  /** Decrypted secrets: `{ access_token }` for WhatsApp; the other channels define their own. */
  secrets: Record<string, string>;
}

/** The entry being dispatched, as an adapter sees it. */
export interface DispatchEntry {
  entryId: string;
  organizationId: string;
  /** The caller's recipient address as given (what the wire call uses). */
  recipient: string;
  payload: OutboxPayload;
  /** What an earlier preparation derived and saved (uploaded media ids), or null. */
  prepared: Record<string, unknown> | null;
  /** The caller's correlation fields (requester, `linkedin_action`, ...): the email and LinkedIn adapters read them. */
  logContext?: Record<string, string | number>;
}

/** The request an adapter will make, built during preparation. */
export interface PreparedSend {
  /** The request body. */
  body: Record<string, unknown>;
  /** Derived values worth keeping for a retry (an uploaded media id), or null. */
  derived: Record<string, unknown> | null;
}

/** The provider took the message. */
export interface SendAccepted {
  /** The provider's id (a wamid); null for calls that return none (read receipts). */
  providerMessageId: string | null;
  httpStatus: number;
  body: unknown;
}

/**
 * A failure of the wire path: every error an adapter's transport raises is one of these, so any
 * other error reaching the dispatcher was thrown by local code before a request existed (seed 004,
 * last row of the classification table).
 */
export class ProviderCallError extends Error {
  constructor(
    readonly failure: Exclude<WireFailure, { kind: 'local' }>,
    message: string,
    readonly body: unknown = null,
    readonly errorCode: string | null = null,
    /** Graph's `error_subcode` (as text) and `error_data.details`, when the answer had them. */
    readonly detail: { subcode?: string | null; details?: string | null } = {},
  ) {
    super(message);
    this.name = 'ProviderCallError';
  }

  get httpStatus(): number | null {
    return this.failure.kind === 'http' ? this.failure.httpStatus : null;
  }
}

/**
 * One provider channel (WhatsApp Cloud API now; email and LinkedIn adapters come with outreach).
 * The dispatcher owns pacing, leases, retries and outcomes; an adapter only speaks the provider.
 */
export interface ProviderAdapter {
  readonly channel: OutboxChannel;
  /** Enqueue-time payload check; returns the problems (empty = valid). Pure. */
  validate(payload: unknown, idempotencyKey: string): string[];
  /**
   * Whether preparing this entry calls the provider (a media upload). When it does not,
   * preparation is pure and the dispatcher may open the attempt in the claim's transaction.
   */
  needsRemotePreparation(entry: DispatchEntry): boolean;
  /**
   * Builds the request and does any variable-length work (media upload) BEFORE the attempt is
   * opened (seed 004 "Dispatch order").
   * @throws ProviderCallError when a provider call (upload) fails; any other error is a local fault
   */
  prepare(entry: DispatchEntry, sender: SenderCredentials): Promise<PreparedSend>;
  /**
   * Makes the one wire call of an attempt.
   * @throws ProviderCallError for every failure of the call
   */
  send(prepared: PreparedSend, sender: SenderCredentials, entry: DispatchEntry): Promise<SendAccepted>;
  /** Classifies a failure by this provider's rules. */
  classify(failure: WireFailure): Classified;
}

/** Injection token of the list of adapters. */
export const PROVIDER_ADAPTERS = Symbol('outbox:provider-adapters');
