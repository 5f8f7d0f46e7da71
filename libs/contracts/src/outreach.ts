// Over 400 lines on purpose: declarations only (one service's contract: names, data shapes, RPC patterns), no rules to split.
/**
 * Contract of the outreach service (DESIGN §4, seed 003 §4–§5): campaigns, enrollments, decisions,
 * proposed actions (the review queue), their events and RPC patterns. Every name and data shape
 * the gateway, the CLI and the outreach runners share is defined here once.
 */

// ---------------------------------------------------------------------------------------------
// Statuses and reasons (seed 003 §4.1, §5)
// ---------------------------------------------------------------------------------------------

/** Campaign lifecycle: `active ⇄ paused`, either `→ archived` (final). Seed 003 §5. */
export const CAMPAIGN_STATUSES = ['active', 'paused', 'archived'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/** Channels a campaign may use. */
export const OUTREACH_CHANNELS = ['email', 'linkedin'] as const;
export type OutreachChannel = (typeof OUTREACH_CHANNELS)[number];

/** Enrollment lifecycle: live while `active` or `needs_contact_data`; `ended` is final. Seed 003 §4.1. */
export const OUTREACH_ENROLLMENT_STATUSES = ['active', 'needs_contact_data', 'ended'] as const;
export type OutreachEnrollmentStatus = (typeof OUTREACH_ENROLLMENT_STATUSES)[number];

/** Why an enrollment ended (seed 003 §4.1, the `ended` box). */
export const OUTREACH_ENROLLMENT_END_REASONS = ['goal_met', 'stop_decision', 'max_touches', 'stalled', 'opted_out', 'user_exit', 'campaign_archived', 'duplicate', 'person_removed'] as const;
export type OutreachEnrollmentEndReason = (typeof OUTREACH_ENROLLMENT_END_REASONS)[number];

/** Who an enrollment is about: a messaging contact of this kind (DESIGN §6: crm person or prospect). */
export type PersonKind = 'crm' | 'prospect';

/** Why a decision runs (seed 003 §4.2 "The trigger", §4.7). */
export const DECISION_REASONS = ['enrolled', 'followup_due', 'reply_received', 'draft_rejected', 'manual_retry', 'invitation_accepted'] as const;
export type DecisionReason = (typeof DECISION_REASONS)[number];

/** The actions the Outreach Agent can choose (seed 003 §4.3). */
export const OUTREACH_ACTION_TYPES = ['email', 'linkedin_connection', 'linkedin_message', 'wait', 'stop'] as const;
export type OutreachActionType = (typeof OUTREACH_ACTION_TYPES)[number];
/** The action types that make a draft for review. */
export type OutboundActionType = 'email' | 'linkedin_connection' | 'linkedin_message';

/**
 * What became of one decision run: `saved` (its effect is on the enrollment), `invalid` (the
 * post-check or the draft check refused it; counts toward stalled), `error` (the model run or the
 * runner failed; never counts), `discarded` (a newer context version got there first).
 */
export const DECISION_OUTCOMES = ['saved', 'invalid', 'error', 'discarded'] as const;
export type DecisionOutcome = (typeof DECISION_OUTCOMES)[number];

/** Proposed action lifecycle (seed 003 §5, outreach_proposed_actions). */
export const ACTION_STATUSES = ['pending_approval', 'approved', 'sending', 'executed', 'rejected', 'invalidated', 'failed'] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];

/** What the reviewer asks for after a rejection (seed 003 §4.5). */
export type RejectThen = 'regenerate' | 'stop';

/** Codes of the draft check (seed 003 §4.4); an edit that fails answers 422 with the same code. */
export const DRAFT_CHECK_CODES = ['draft_empty', 'draft_too_long', 'draft_placeholder', 'draft_link_in_note'] as const;
export type DraftCheckCode = (typeof DRAFT_CHECK_CODES)[number];

/** LinkedIn relation of a person to the campaign's sender account (seed 003 §4.2). */
export type LinkedinState = 'none' | 'invited' | 'connected' | 'declined';

// ---------------------------------------------------------------------------------------------
// Limits (seed 003 §4.1, §5 "Not stored": constants in code)
// ---------------------------------------------------------------------------------------------

/** Most people in one batch enrollment; more answers 422 (seed 003 §4.1). */
export const OUTREACH_MAX_BATCH = 200;
/** Most live enrollments of one campaign (seed 003 §4.1, the cap). */
export const OUTREACH_MAX_LIVE_PER_CAMPAIGN = 200;
/** Longest regenerate reason, characters (seed 003 §4.5). */
export const OUTREACH_REJECT_REASON_MAX = 1000;

// ---------------------------------------------------------------------------------------------
// Events and commands (its own, consumed by its runners; seed 003 §3, §5 "Events")
// ---------------------------------------------------------------------------------------------

export const OutreachEvents = {
  /**
   * `DecisionRequestedData`: a decision must run for one enrollment. The event id is the cause:
   * `enrolled:{id}`, `reply:{message_id}`, `rejected:{action_id}`, `due:{id}:{next_check_at}`,
   * `retry:{id}:{context_version}` (manual_retry).
   */
  DecisionRequested: 'outreach.decision.requested',
  /** `ActionApprovedData`: an approved action may be sent; id `approved:{action_id}:{next_attempt_at}`. */
  ActionApproved: 'outreach.action.approved',
} as const;

export interface DecisionRequestedData {
  enrollment_id: string;
  reason: DecisionReason;
  /** The message id for `reply_received`, the rejected action id for `draft_rejected`. */
  ref?: string | null;
}

export interface ActionApprovedData {
  action_id: string;
  enrollment_id: string;
}

// ---------------------------------------------------------------------------------------------
// RPC patterns (the gateway forwards to these; the CLI calls the review ones)
// ---------------------------------------------------------------------------------------------

export const OutreachRpc = {
  CampaignCreate: 'outreach.campaigns.create',
  CampaignList: 'outreach.campaigns.list',
  CampaignGet: 'outreach.campaigns.get',
  CampaignPause: 'outreach.campaigns.pause',
  CampaignResume: 'outreach.campaigns.resume',
  CampaignArchive: 'outreach.campaigns.archive',
  CampaignDelete: 'outreach.campaigns.delete',
  /** `{ organization_id }` → `OutreachSettingsView`. */
  SettingsGet: 'outreach.settings.get',
  /** Organization-wide stop and resume (`outreach_stopped_at`, seed 003 §6). */
  Stop: 'outreach.stop',
  Resume: 'outreach.resume',

  EnrollOne: 'outreach.enrollments.create',
  EnrollBatch: 'outreach.enrollments.batch',
  EnrollmentGet: 'outreach.enrollments.get',
  EnrollmentList: 'outreach.enrollments.list',
  EnrollmentExit: 'outreach.enrollments.exit',
  EnrollmentManualRetry: 'outreach.enrollments.manual_retry',
  EnrollmentTimeline: 'outreach.enrollments.timeline',

  /** `ReviewQueueQuery` → `ReviewQueuePage`. */
  ActionList: 'outreach.actions.list',
  ActionApprove: 'outreach.actions.approve',
  ActionReject: 'outreach.actions.reject',
} as const;

/**
 * RPCs outreach needs from the outbox-dispatcher that its contract (outbox.ts) does not declare yet
 * (DESIGN §4: contact_suppressions and the LinkedIn data live in the dispatcher). Until the
 * dispatcher answers them, outreach treats every failed read as the seed says: a suppression read
 * that fails refuses (enroll answers 503, a decision sees the channel as suppressed, execution does
 * not send), a LinkedIn read that fails counts as suppressed for that run (seed 003 §4.2).
 */
export const OutreachDispatcherRpc = {
  /** `SuppressionCheckData` → `SuppressionCheckResult`. */
  SuppressionCheck: 'outbox.suppressions.check',
  /** `LinkedinStateQuery` → `LinkedinStateView`. */
  LinkedinState: 'outbox.linkedin.state',
  /**
   * `EmailHeadersQuery` → `EmailHeadersView`: one Nylas message read with its headers
   * (`fields=include_headers`), for the auto-reply rule (seed 003 §4.7). Messaging asks it for a new
   * inbound email, with the mailbox the email arrived on.
   */
  EmailHeaders: 'outbox.email.headers',
  /**
   * `ProviderAccountLookup` → `ProviderAccountOwner`: which organization's sender is a Nylas grant
   * or a Unipile account (the gateway's webhook ingress routes a delivery by it).
   */
  SenderLookupByAccount: 'outbox.senders.lookup_account',
} as const;

export interface ProviderAccountLookup {
  channel: 'email' | 'linkedin';
  /** The Nylas `grant_id` or the Unipile `account_id`. */
  account_id: string;
}

/** All null when nobody owns the account. `address`: the mailbox address or the LinkedIn member id. */
export interface ProviderAccountOwner {
  organization_id: string | null;
  sender_id: string | null;
  address: string | null;
}

export interface EmailHeadersQuery {
  organization_id: string;
  /** The provider (Nylas) message id of the inbound email. */
  provider_message_id: string;
  /**
   * The mailbox (dispatcher sender id) that received it. Required: Nylas answers 404 for a message
   * read with another mailbox's grant, so no default mailbox is ever assumed.
   */
  sender_id: string;
}

export interface EmailHeadersView {
  headers: { name: string; value: string }[];
  subject: string | null;
}

export interface SuppressionCheckData {
  organization_id: string;
  /** Addresses to check: an email, a LinkedIn provider id or profile URL. */
  values: { channel: 'email' | 'linkedin'; value: string }[];
}

/** The subset of `values` that is on the do-not-contact list. */
export interface SuppressionCheckResult {
  suppressed: { channel: 'email' | 'linkedin'; value: string }[];
}

export interface LinkedinStateQuery {
  organization_id: string;
  /** The campaign's LinkedIn account (a dispatcher sender id). */
  sender_id: string;
  linkedin_url: string | null;
  provider_id: string | null;
}

export interface LinkedinStateView {
  state: LinkedinState;
  /** The sender account can send right now. */
  sender_connected: boolean;
  /** The person's LinkedIn provider id, when the invitation or chat knows it. */
  provider_id?: string | null;
  /** Chat messages with the person, newest first. */
  messages?: { message_id: string; at: string; direction: 'inbound' | 'outbound'; text: string }[];
}

// ---------------------------------------------------------------------------------------------
// Campaigns
// ---------------------------------------------------------------------------------------------

export interface CampaignCreateData {
  organization_id: string;
  name: string;
  goal: string;
  allowed_channels: OutreachChannel[];
  max_touches: number;
  followup_min_days: number;
  followup_max_days: number;
  /** Dispatcher sender id of the mailbox that sends the campaign's email (default sender when absent). */
  email_sender_id?: string | null;
  /** Dispatcher sender id of the LinkedIn account (LinkedIn actions need one). */
  linkedin_sender_id?: string | null;
}

export interface CampaignView {
  id: string;
  organization_id: string;
  name: string;
  goal: string;
  status: CampaignStatus;
  allowed_channels: OutreachChannel[];
  max_touches: number;
  followup_min_days: number;
  followup_max_days: number;
  email_sender_id: string | null;
  linkedin_sender_id: string | null;
  /** Live enrollments (active + needs_contact_data). */
  live_enrollments: number;
  created_at: string;
  updated_at: string;
  paused_at: string | null;
  archived_at: string | null;
}

export interface CampaignRef {
  organization_id: string;
  campaign_id: string;
}

export interface OutreachSettingsView {
  organization_id: string;
  outreach_stopped_at: string | null;
}

// ---------------------------------------------------------------------------------------------
// Enrollments
// ---------------------------------------------------------------------------------------------

export interface PersonRef {
  person_kind: PersonKind;
  /** The messaging contact id. */
  person_id: string;
}

export interface EnrollOneData extends PersonRef {
  organization_id: string;
  campaign_id: string;
}

export interface EnrollBatchData {
  organization_id: string;
  campaign_id: string;
  people: PersonRef[];
}

/**
 * One person's result (seed 003 §4.1): `added` (a new enrollment, or `existing: true` for the
 * same person already live in this campaign), `already_enrolled` (live in another campaign, named
 * with its status), `campaign_full`, `opted_out`, or `not_found` (ours: no such person).
 */
export type EnrollResult =
  | { person_kind: PersonKind; person_id: string; result: 'added'; enrollment_id: string; existing: boolean }
  | { person_kind: PersonKind; person_id: string; result: 'already_enrolled'; enrollment_id: string; campaign_id: string; campaign_name: string; campaign_status: CampaignStatus }
  | { person_kind: PersonKind; person_id: string; result: 'campaign_full' | 'opted_out' | 'not_found' };

export interface EnrollBatchResult {
  campaign_id: string;
  results: EnrollResult[];
}

export interface OutreachEnrollmentView {
  id: string;
  organization_id: string;
  campaign_id: string;
  person_kind: PersonKind;
  person_id: string;
  status: OutreachEnrollmentStatus;
  ended_reason: OutreachEnrollmentEndReason | null;
  ended_at: string | null;
  touch_count: number;
  context_version: number;
  next_check_at: string | null;
  created_at: string;
  updated_at: string;
  /** A draft waits for review (derived, seed 003 §5 "Not stored"). */
  awaiting_approval: boolean;
}

export interface OutreachEnrollmentRef {
  organization_id: string;
  enrollment_id: string;
}

export interface OutreachEnrollmentListQuery {
  organization_id: string;
  campaign_id: string;
  status?: OutreachEnrollmentStatus;
  /** 1–500, default 200. */
  limit?: number;
  /** `next_cursor` of the previous page (same campaign and status). */
  cursor?: string;
}

/** One item of the enrollment drawer's timeline (seed 003 §4.5), newest first, tie on id. */
export interface TimelineItem {
  id: string;
  /** `next_check_moved`: an out-of-office auto-reply stated a return date and moved the next check past it. */
  kind: 'enrolled' | 'decision' | 'action' | 'email' | 'linkedin_message' | 'next_check_moved' | 'ended';
  /** ISO-8601 UTC; null sorts last. */
  at: string | null;
  data: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Review queue (seed 003 §4.5)
// ---------------------------------------------------------------------------------------------

/**
 * Who acts on a review route, as the caller's credential proves it: a current member of the
 * organization (the gateway: the member its API key acts for; the admin CLI: the `--member` it
 * checked), the key when there is one, and whether a support person acts as that member (a key
 * issued for impersonation). Approve and reject refuse an impersonated session (seed 003 §4.5).
 */
export interface OutreachActor {
  member_id: string;
  api_key_id?: string;
  impersonated?: boolean;
}

export interface ReviewQueueQuery {
  organization_id: string;
  limit?: number;
}

/** The text a reviewer sees and edits. Which fields apply depends on the type. */
export interface DraftPayload {
  subject?: string;
  body?: string;
  note?: string;
}

/** A review card (seed 003 §4.5): everything the card shows, `to` read fresh. */
export interface ReviewCard {
  id: string;
  enrollment_id: string;
  type: OutboundActionType;
  status: ActionStatus;
  created_at: string;
  age_seconds: number;
  person: { person_kind: PersonKind; person_id: string; name: string | null; company: string | null };
  campaign: { campaign_id: string; name: string; status: CampaignStatus };
  /** The email address, or the LinkedIn profile URL; null when the person has none now. */
  to: string | null;
  /** The inbound message the draft answers, cut at 500 characters; null unless a reply. */
  replying_to: string | null;
  rationale: string | null;
  objective: string | null;
  draft: DraftPayload;
}

export interface ReviewQueuePage {
  items: ReviewCard[];
  /** Every pending action of the organization (the nav badge). */
  total: number;
}

export interface ActionApproveData {
  organization_id: string;
  action_id: string;
  actor: OutreachActor;
  /** The reviewer's edit, merged over the draft (a field left out keeps its text); absent → the draft as written. */
  payload?: DraftPayload;
}

export interface ActionRejectData {
  organization_id: string;
  action_id: string;
  actor: OutreachActor;
  then: RejectThen;
  reason?: string;
}

/** A proposed action as answers show it. */
export interface ActionView {
  id: string;
  organization_id: string;
  enrollment_id: string;
  decision_id: string;
  type: OutboundActionType;
  status: ActionStatus;
  draft_payload: DraftPayload;
  approved_payload: Record<string, unknown> | null;
  approved_hash: string | null;
  approved_by: string | null;
  approved_at: string | null;
  next_attempt_at: string | null;
  rejected_by: string | null;
  rejected_at: string | null;
  reject_reason: string | null;
  reject_then: RejectThen | null;
  executed_at: string | null;
  message_id: string | null;
  provider_message_id: string | null;
  failure_reason: string | null;
  outcome_unknown: boolean;
  created_at: string;
}

// ---------------------------------------------------------------------------------------------
// Email do-not-contact ingress (seed 003 §4.7: the unsubscribe link and Nylas bounce_detected)
// ---------------------------------------------------------------------------------------------

/** RPCs the gateway's Nylas routes call; both answer only once the writes are durable. */
export const OutreachSuppressionRpc = {
  /** `EmailUnsubscribeData` → `EmailSuppressionResult`: the email suppressed, live enrollments ended `opted_out`. */
  EmailUnsubscribe: 'outreach.email.unsubscribe',
  /** `EmailBounceData` → `EmailSuppressionResult`: each address suppressed, live enrollments v+1 and due now. */
  EmailBounce: 'outreach.email.bounce',
} as const;

export interface EmailUnsubscribeData {
  organization_id: string;
  email: string;
}

export interface EmailBounceData {
  organization_id: string;
  /** The bounced message's recipients. */
  emails: string[];
  /** The Nylas id of the bounced message (the cause id of the writes). */
  provider_message_id?: string | null;
}

export interface EmailSuppressionResult {
  suppressed: { channel: 'email' | 'linkedin'; value: string }[];
  enrollment_ids: string[];
}
