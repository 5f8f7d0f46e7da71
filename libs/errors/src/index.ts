/**
 * One error shape across HTTP and the bus (DESIGN §3):
 * `{"error": {"code": "snake_case_code", "message": "...", "details": ...}}`.
 *
 * A service throws `AppError` with a code from `ErrorCode`; the gateway maps the code to an HTTP
 * status with `httpStatusOf` (an exhaustive switch), and the bus decides retry or dead-letter with
 * `isRetryable`.
 */
export enum ErrorCode {
  // generic request errors
  InvalidJson = 'invalid_json',
  ValidationFailed = 'validation_failed',
  PayloadTooLarge = 'payload_too_large',
  HeadersTooLarge = 'headers_too_large',
  RequestTimeout = 'request_timeout',
  MalformedRequest = 'malformed_request',
  UriTooLong = 'uri_too_long',
  UnsupportedMediaType = 'unsupported_media_type',
  Unauthorized = 'unauthorized',
  Forbidden = 'forbidden',
  NotFound = 'not_found',
  RouteNotFound = 'route_not_found',
  MethodNotAllowed = 'method_not_allowed',
  Conflict = 'conflict',
  /** Removing this member would leave the organization without an active admin. */
  LastAdmin = 'last_admin',
  IdempotencyConflict = 'idempotency_conflict',
  RateLimited = 'rate_limited',
  ServiceUnavailable = 'service_unavailable',
  Internal = 'internal_error',
  // seed 002 (follow-up REST)
  StageRequired = 'stage_required',
  PublishRequired = 'publish_required',
  InvalidGraph = 'invalid_graph',
  DispatchBusy = 'dispatch_busy',
  AlreadyPending = 'already_pending',
  AlreadyTerminal = 'already_terminal',
  InvalidCursor = 'invalid_cursor',
  RevisionConflict = 'revision_conflict',
  // seed 003 (outreach)
  ActionNotPending = 'action_not_pending',
  AlreadyEnrolled = 'already_enrolled',
  CampaignArchived = 'campaign_archived',
  ProspectSendCapReached = 'prospect_send_cap_reached',
  CampaignFull = 'campaign_full',
  OptedOut = 'opted_out',
  CampaignNotActive = 'campaign_not_active',
  EnrollmentNotActive = 'enrollment_not_active',
  OutreachStopped = 'outreach_stopped',
  CampaignHasEnrollments = 'campaign_has_enrollments',
  NoContactAddress = 'no_contact_address',
  BatchTooLarge = 'batch_too_large',
  DraftEmpty = 'draft_empty',
  DraftTooLong = 'draft_too_long',
  DraftPlaceholder = 'draft_placeholder',
  DraftLinkInNote = 'draft_link_in_note',
  // seed 004 (outbox: enqueue validation and ambiguous resolution)
  InvalidPayload = 'invalid_payload',
  InvalidRecipient = 'invalid_recipient',
  SenderNotFound = 'sender_not_found',
  SenderDisconnected = 'sender_disconnected',
  SenderUnverified = 'sender_unverified',
  UnsupportedChannel = 'unsupported_channel',
  /** A WhatsApp send outside the contact's 24-hour customer-service window with no approved template to send instead. */
  WhatsAppTemplateRequired = 'whatsapp_template_required',
  NotAmbiguous = 'not_ambiguous',
  InvalidResolution = 'invalid_resolution',
  // CRM ingress: the event names no contact of the organization
  UnknownContact = 'unknown_contact',
  // agents registry (seed 002: an agent enrolls only with followup.enabled, into its flow_ids)
  AgentFollowupDisabled = 'agent_followup_disabled',
  FlowNotAllowedForAgent = 'flow_not_allowed_for_agent',
  // bus
  NoHandler = 'no_handler',
  InvalidMessage = 'invalid_message',
}

/** The JSON body of every failure. */
export interface ErrorEnvelope {
  error: { code: string; message: string; details?: unknown };
}

/** A domain or request error with a stable code; safe to show to the caller. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode | string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }

  toEnvelope(): ErrorEnvelope {
    const body: ErrorEnvelope = { error: { code: this.code, message: this.message } };
    if (this.details !== undefined) body.error.details = this.details;
    return body;
  }

  /** Rebuilds an AppError from an envelope (or its inner object) received over RPC. */
  static fromEnvelope(value: unknown): AppError | undefined {
    const inner = (value as ErrorEnvelope | undefined)?.error ?? value;
    if (inner && typeof inner === 'object' && typeof (inner as { code?: unknown }).code === 'string') {
      const { code, message, details } = inner as { code: string; message?: string; details?: unknown };
      return new AppError(code, message ?? code, details);
    }
    return undefined;
  }
}

/**
 * HTTP status of an error code. Unknown codes (a newer service speaking to an older gateway) are
 * 400 when they look like a caller's fault would be a guess, so they are 500 instead.
 */
export function httpStatusOf(code: ErrorCode | string): number {
  const known = code as ErrorCode;
  switch (known) {
    case ErrorCode.InvalidJson:
    case ErrorCode.MalformedRequest:
    case ErrorCode.ValidationFailed:
    case ErrorCode.InvalidMessage:
    case ErrorCode.InvalidPayload:
    case ErrorCode.InvalidRecipient:
    case ErrorCode.InvalidResolution:
      return 400;
    case ErrorCode.Unauthorized:
      return 401;
    case ErrorCode.Forbidden:
      return 403;
    case ErrorCode.NotFound:
    case ErrorCode.RouteNotFound:
    case ErrorCode.SenderNotFound:
      return 404;
    case ErrorCode.MethodNotAllowed:
      return 405;
    case ErrorCode.Conflict:
    case ErrorCode.LastAdmin:
    case ErrorCode.IdempotencyConflict:
    case ErrorCode.RevisionConflict:
    case ErrorCode.DispatchBusy:
    case ErrorCode.AlreadyPending:
    case ErrorCode.AlreadyTerminal:
    case ErrorCode.ActionNotPending:
    case ErrorCode.AlreadyEnrolled:
    case ErrorCode.CampaignArchived:
    case ErrorCode.CampaignFull:
    case ErrorCode.OptedOut:
    case ErrorCode.CampaignNotActive:
    case ErrorCode.EnrollmentNotActive:
    case ErrorCode.OutreachStopped:
    case ErrorCode.CampaignHasEnrollments:
    case ErrorCode.NoContactAddress:
    case ErrorCode.SenderDisconnected:
    case ErrorCode.NotAmbiguous:
      return 409;
    case ErrorCode.PayloadTooLarge:
      return 413;
    case ErrorCode.HeadersTooLarge:
      return 431;
    case ErrorCode.UriTooLong:
      return 414;
    case ErrorCode.RequestTimeout:
      return 408;
    case ErrorCode.UnsupportedMediaType:
      return 415;
    case ErrorCode.StageRequired:
    case ErrorCode.PublishRequired:
    case ErrorCode.InvalidGraph:
    case ErrorCode.InvalidCursor:
    case ErrorCode.UnsupportedChannel:
    case ErrorCode.WhatsAppTemplateRequired:
    case ErrorCode.SenderUnverified:
    case ErrorCode.BatchTooLarge:
    case ErrorCode.DraftEmpty:
    case ErrorCode.DraftTooLong:
    case ErrorCode.DraftPlaceholder:
    case ErrorCode.DraftLinkInNote:
    case ErrorCode.UnknownContact:
    case ErrorCode.AgentFollowupDisabled:
    case ErrorCode.FlowNotAllowedForAgent:
      return 422;
    case ErrorCode.RateLimited:
    case ErrorCode.ProspectSendCapReached:
      return 429;
    case ErrorCode.ServiceUnavailable:
      return 503;
    case ErrorCode.Internal:
    case ErrorCode.NoHandler:
      return 500;
    default: {
      const unknownCode: never = known;
      return unknownCode ? 500 : 500;
    }
  }
}

/**
 * Whether a bus handler that failed with this error should be retried. Errors that say the message
 * itself is wrong will fail the same way every time, so they go straight to the dead-letter queue.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof AppError) {
    // invalid_payload: the dispatcher's payload rules refuse it, and will every time.
    return ![ErrorCode.InvalidMessage, ErrorCode.ValidationFailed, ErrorCode.InvalidPayload, ErrorCode.NoHandler].includes(err.code as ErrorCode);
  }
  return true;
}
