// Over 400 lines on purpose: declarations only (one service's contract: names, data shapes, RPC patterns), no rules to split.
/**
 * Contract of the followups service (DESIGN §4; seed 002 "Fluxos", "Inscrições", "Fila"; seed 000
 * "Release", "Stop paths"): the graph of a flow, its settings, the RPC patterns the gateway
 * forwards the REST routes to, the views they answer, and the events followups publishes.
 *
 * One graph engine serves both seeds (DESIGN §6): a linear sequence is a chain of `wait` and
 * `action` nodes.
 */

// ---------------------------------------------------------------------------------------------
// The graph
// ---------------------------------------------------------------------------------------------

/** Node types of a flow graph (seed 002 "Fluxos"). */
export const FLOW_NODE_TYPES = ['trigger', 'wait', 'condition', 'ai_classify', 'match_reply', 'repeat', 'action', 'end'] as const;
export type FlowNodeType = (typeof FLOW_NODE_TYPES)[number];

/** Edge condition types (seed 002 "Fluxos"). */
export const FLOW_EDGE_CONDITION_TYPES = ['always', 'branch', 'class_match', 'cond_result'] as const;
export type FlowEdgeConditionType = (typeof FLOW_EDGE_CONDITION_TYPES)[number];

/** Graph size limits (seed 002 "Fluxos": 2 to 60 nodes, up to 120 edges). */
export const FLOW_MIN_NODES = 2;
export const FLOW_MAX_NODES = 60;
export const FLOW_MAX_EDGES = 120;

/** Wait bounds (seed 002 "Fluxos": waits go from 5 minutes to 90 days), ms. */
export const FLOW_MIN_WAIT_MS = 5 * 60_000;
export const FLOW_MAX_WAIT_MS = 90 * 24 * 3_600_000;

/** Where a node sits on the builder canvas (px); ignored by the engine. */
export interface FlowNodePosition {
  x: number;
  y: number;
}

/**
 * One node. `config` depends on `type`:
 *
 * - `trigger`: `{}` — the enrollment's start; exactly one per graph; how contacts enter is
 *   `settings.trigger`.
 * - `wait`: `{mode: 'fixed', duration_ms}` waits a fixed time (exit `always`), or
 *   `{mode: 'reply', timeout_ms}` waits for the contact's reply (status `waiting_reply`) with exits
 *   `branch` `replied` and `branch` `timeout`. Both 5 min – 90 days.
 * - `condition`: `{match: 'all' | 'any', rules: [{field, op, value?}]}` on `contact.tags`,
 *   `contact.name|phone|email`, `contact.fields.<key>`, `vars.<key>` or `last_send.status`; exits
 *   `cond_result` `true` and `false`.
 * - `ai_classify`: `{classes: [{id, label, description?}], fallback_class_id, min_confidence?,
 *   instructions?}`; one `class_match` exit per class. The newest reply is classified through
 *   ai-gateway (`followup_classify`); no reply, low confidence or a failed call take `fallback_class_id`.
 * - `match_reply`: `{branches: [{id, keywords: [..]}]}` matched against the last reply (accent-
 *   and case-insensitive, whole words); exits `branch` per branch id plus `branch` `default`.
 * - `repeat`: `{max_count}` (1–20); exits `branch` `again` (taken while the count is below
 *   `max_count`) and `branch` `done`.
 * - `action`: a send — `{mode: 'text', body, template_fallback?}`, `{mode: 'template', template}`,
 *   `{mode: 'media', media: {media_type, link, caption?, filename?}, template_fallback?}`,
 *   `{mode: 'ai', instructions, template_fallback?}` (AI-written) — or not —
 *   `{mode: 'tag' | 'untag', tags}`, `{mode: 'handoff', note?}`. Exit `always`.
 * - `end`: `{outcome?}` (a snake_case word, default `completed`); no exits.
 *
 * Text, captions and template parameters may use `{{vars.<key>}}`, `{{anchor.at|date|time}}` and
 * `{{contact.name|first_name}}`; a missing value skips the send (seed 000 "render").
 */
export interface FlowNode {
  id: string;
  type: FlowNodeType | string;
  label?: string;
  position?: FlowNodePosition;
  config: Record<string, unknown>;
}

/** An edge's condition: which exit of its source node it covers. */
export type FlowEdgeCondition = { type: 'always' } | { type: 'branch'; branch_id: string } | { type: 'class_match'; class_id: string } | { type: 'cond_result'; value: boolean };

export interface FlowEdge {
  id: string;
  source: string;
  target: string;
  condition: FlowEdgeCondition;
}

export interface FlowGraph {
  nodes: FlowNode[];
  edges: FlowEdge[];
}

/** An approved WhatsApp template reference; `parameters` fill the body's `{{1}}`, `{{2}}`… in order. */
export interface FlowTemplateRef {
  name: string;
  language: string;
  parameters?: string[];
}

/** One `validation_errors` item of a 422 `invalid_graph` (seed 002 "publish"). */
export interface FlowValidationError {
  /** The node at fault, or null for a graph-wide problem. */
  node_id: string | null;
  code: FlowValidationCode;
  message: string;
  /** The exit at fault (a branch, class or condition result), when there is one. */
  branch_id: string | null;
}

/** Every code publish validation can report (one `it.each` row per code in the unit tests). */
export const FLOW_VALIDATION_CODES = [
  'unknown_node_type',
  'invalid_config',
  'duplicate_node_id',
  'duplicate_edge_id',
  'dangling_edge',
  'invalid_edge_condition',
  'node_count',
  'edge_count',
  'trigger_count',
  'trigger_has_inbound',
  'end_has_exit',
  'unreachable_node',
  'no_path_to_end',
  'uncovered_exit',
  'duplicate_exit',
  'cycle_without_wait',
  'wait_out_of_range',
  'needs_template_fallback',
  'unknown_template',
  'ai_step_unavailable',
  'invalid_settings',
] as const;
export type FlowValidationCode = (typeof FLOW_VALIDATION_CODES)[number];

// ---------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------

/**
 * How contacts enter a flow: `manual` (REST/agent enrollment, bulk jobs) or a rule on an event
 * (seed 000 "Rules"); a rule's filter and segment are `FlowTriggerFilter` fields of `settings.trigger`.
 */
export const FLOW_TRIGGER_KINDS = ['manual', 'contact_created', 'tag_added', 'lead_created', 'lead_status_changed', 'deal_stage_changed', 'inbound_keyword', 'conversation_resolved'] as const;
export type FlowTriggerKind = (typeof FLOW_TRIGGER_KINDS)[number];

/** What a human message (handoff) does to a live enrollment: pause it, stop it, or nothing. */
export const HANDOFF_POLICIES = ['pause', 'stop', 'continue'] as const;
export type HandoffPolicy = (typeof HANDOFF_POLICIES)[number];

/** Which business number sends (seed 000 "number (enrollment, fixed, last conversation, default, any connected)"). */
export const SENDER_MODES = ['enrollment', 'fixed', 'last_conversation', 'default', 'any'] as const;
export type SenderMode = (typeof SENDER_MODES)[number];

/** Settings of a flow (seed 002 example). Hours are local to `timezone`; days are ISO (1 = Monday … 7 = Sunday). */
export interface FlowSettings {
  trigger: { kind: FlowTriggerKind; cancel_on_reply: boolean; [key: string]: unknown };
  handoff_policy: HandoffPolicy;
  /** First hour a send may go out (0–23); absent → the organization's default window. */
  send_start_hour?: number;
  /** Hour sends stop (1–24, exclusive). */
  send_end_hour?: number;
  send_days?: number[];
  /** IANA time zone of the window. */
  timezone?: string;
  purpose?: 'utility' | 'marketing';
  environment?: 'live' | 'test';
  /**
   * The flow's number: with `mode: 'fixed'`, `sender_id` is the flow's fixed number. Every send
   * takes the first connected number of seed 000's chain — the enrollment's (`sender_id` at
   * enrollment, then the number its last send used), the flow's fixed one, the contact's last
   * conversation's, the organization's default, any connected — whatever the mode; the other modes
   * are accepted and add no number of their own.
   */
  sender?: { mode: SenderMode; sender_id?: string };
  /**
   * Every send waits for a person's decision (`awaiting_decision`) before it goes out (seed 002
   * "Efeitos"); default false.
   */
  require_approval?: boolean;
  /**
   * Whose clock the send window's hours are read on: `flow` (default) reads them in `timezone` (or
   * the organization's default zone); `contact` reads them in the contact's own `time_zone` when it
   * has a valid one, falling back to the flow's zone when it has none.
   */
  timezone_mode?: FlowTimezoneMode;
}

/** Values of `FlowSettings.timezone_mode`. */
export const FLOW_TIMEZONE_MODES = ['flow', 'contact'] as const;
export type FlowTimezoneMode = (typeof FLOW_TIMEZONE_MODES)[number];

/** Flow status (seed 002 PATCH): `draft` until first activated. */
export const FLOW_STATUSES = ['draft', 'active', 'paused', 'archived'] as const;
export type FlowStatus = (typeof FLOW_STATUSES)[number];

/** Consent rule for sends: `none`, opt-in tag needed for marketing flows, or for every flow. */
export const CONSENT_MODES = ['none', 'marketing_opt_in', 'all_opt_in'] as const;
export type ConsentMode = (typeof CONSENT_MODES)[number];

/** Organization-wide follow-up settings. */
export interface FollowupSettingsView {
  customer_id: string;
  /** Default send window for flows that set none. */
  send_window: { start_hour: number; end_hour: number; days: number[]; timezone: string };
  /** At most this many follow-up sends to one contact in any 24 hours (seed 000 "per-contact 24 h cap"). */
  contact_daily_cap: number;
  /** Follow-up sends per calendar month (UTC); null = unlimited (seed 000 "monthly quota"). */
  monthly_send_quota: number | null;
  consent_mode: ConsentMode;
  /** The tag that records a contact's opt-in, for the consent modes. */
  consent_tag: string;
  /** Live enrollments the plan allows; null = unlimited. */
  max_live_enrollments: number | null;
  /** Finished enrollments are deleted after this many days. */
  retention_days: number;
  /** Approved WhatsApp templates flows may use (publish checks `unknown_template` against it). */
  approved_templates: { name: string; language: string; parameter_count: number }[];
  /**
   * The organization's follow-ups entitlement (its plan includes follow-ups). Turned off by an
   * admin or the billing side (`PUT /ai/followups/settings/entitlement`, never by
   * `PUT /ai/followups/settings`): every live enrollment is stopped with reason `plan_lost` at its
   * next release, and new enrollments are refused (seed 000 "plan lost → stop"). Default true.
   */
  followups_enabled: boolean;
  revision: number;
  updated_at: string;
}

export type FollowupSettingsUpdate = Partial<Omit<FollowupSettingsView, 'customer_id' | 'revision' | 'updated_at' | 'followups_enabled'>>;

// ---------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------

export interface FlowView {
  id: string;
  customer_id: string;
  name: string;
  /** The draft. */
  graph: FlowGraph;
  settings: FlowSettings;
  status: FlowStatus;
  published_version_id: string | null;
  revision: number;
  model_id: string | null;
  stage_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface FlowVersionView {
  id: string;
  flow_id: string;
  /** 1, 2, 3… in publication order. */
  version: number;
  graph: FlowGraph;
  settings: FlowSettings;
  /** Set when this version republished an older one (rollback). */
  source_version_id: string | null;
  published_at: string;
}

/** A ready-made flow (seed 002 `from-model`). */
export interface FlowModelView {
  id: string;
  name: string;
  summary: string;
  journey: string;
  trigger_description: string;
  requires_stage: boolean;
  max_messages: number;
}

/** Enrollment statuses (seed 002 "Inscrições"). */
export const FOLLOWUP_ENROLLMENT_STATUSES = ['active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual', 'completed', 'cancelled', 'dead'] as const;
export type FollowupEnrollmentStatus = (typeof FOLLOWUP_ENROLLMENT_STATUSES)[number];
/** Statuses that count as live (one per flow × contact). */
export const LIVE_ENROLLMENT_STATUSES: readonly FollowupEnrollmentStatus[] = ['active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual'];

export const ENROLLMENT_CONTROL_ACTIONS = ['pause', 'resume', 'cancel', 'advance_now'] as const;
export type EnrollmentControlAction = (typeof ENROLLMENT_CONTROL_ACTIONS)[number];

export interface FollowupEnrollmentView {
  id: string;
  customer_id: string;
  flow_id: string;
  version_id: string;
  contact_id: string;
  conversation_id: string | null;
  agent_id: string | null;
  appointment_id: string | null;
  operation_key: string;
  status: FollowupEnrollmentStatus;
  node_id: string | null;
  next_run_at: string | null;
  /** Why it stopped or is parked (`replied`, `opted_out`, `flow_paused`, an `end` outcome…). */
  reason: string | null;
  variables: Record<string, unknown>;
  anchor_at: string | null;
  sender_id: string | null;
  revision: number;
  failures: number;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

export interface EnrollmentEventView {
  id: string;
  type: string;
  node_id: string | null;
  data: Record<string, unknown>;
  created_at: string;
}

/**
 * Effect statuses: `queued` and `uncertain` are a send in flight (control answers `dispatch_busy`);
 * `awaiting_decision` → `approved` | `rejected` is the approval of a send (seed 002 "Efeitos");
 * `rejected` is also where an uncertain send reconciled as rejected ends.
 */
export const EFFECT_STATUSES = ['queued', 'sent', 'failed', 'cancelled', 'skipped', 'uncertain', 'done', 'awaiting_decision', 'approved', 'rejected'] as const;
export type EffectStatus = (typeof EFFECT_STATUSES)[number];

/** What a step did: a send, a classification, a schedule plan (deferral), or another action. */
export interface EffectView {
  id: string;
  enrollment_id: string;
  node_id: string;
  kind: 'send' | 'classification' | 'schedule_plan' | 'action';
  status: EffectStatus;
  text: string | null;
  template: FlowTemplateRef | null;
  /** Model usage of AI-written steps. */
  usage: Record<string, unknown> | null;
  message_id: string | null;
  /**
   * A send's idempotency key (`followup:<enrollment>:<node>:<visit>`), which messaging and the
   * outbox-dispatcher carry unchanged: the outbox entry of an `uncertain` send is the one
   * `GET /outbox/ambiguous` lists with this key (its message id may not be known yet). Null for
   * effects that send nothing.
   */
  idempotency_key: string | null;
  sender_id: string | null;
  reason: string | null;
  /**
   * How far the provider says a send got after it was sent: `delivered`, `read`, or null (not
   * reported yet, or not a send). Only moves forward: a `delivered` reported after `read` leaves it `read`.
   */
  delivery_status: 'delivered' | 'read' | null;
  /** When the provider reported the send delivered to the phone (ISO-8601, UTC); null when not reported. */
  delivered_at: string | null;
  /** When the provider reported the send read (ISO-8601, UTC); null when not reported. */
  read_at: string | null;
  /** When a person approved or rejected the send (flows with `require_approval`). */
  decided_at: string | null;
  /** How an uncertain send was reconciled: `{outcome, note, wamid, at}`. */
  resolution: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}

/** One row of `GET /ai/followups/queue` (seed 002 "Fila", item shape as documented). */
export interface QueueItemView {
  kind: 'enrollment' | 'promise';
  id: string;
  contact_id: string;
  contact_name: string | null;
  contact_phone: string | null;
  conversation_id: string | null;
  flow_id: string | null;
  flow_name: string | null;
  agent_id: string | null;
  agent_name: string | null;
  status: string;
  node_id: string | null;
  next_fire_at: string | null;
  reason: string | null;
  updated_at: string;
  created_at: string;
  last_error: string | null;
}

/** A cursor page, as seed 002 shows it inside `data`. */
export interface CursorPage<T> {
  data: T[];
  next_cursor: string | null;
}

/** Every seed-002 answer is wrapped in `{data: ...}`. */
export interface DataEnvelope<T> {
  data: T;
}

// ---------------------------------------------------------------------------------------------
// RPC patterns (gateway → followups) and their inputs
// ---------------------------------------------------------------------------------------------

export const FollowupsRpc = {
  FlowList: 'followups.flows.list',
  FlowCreate: 'followups.flows.create',
  FlowModels: 'followups.flows.models',
  FlowCreateFromModel: 'followups.flows.create_from_model',
  FlowGet: 'followups.flows.get',
  FlowUpdate: 'followups.flows.update',
  FlowSetStatus: 'followups.flows.set_status',
  FlowPublish: 'followups.flows.publish',
  FlowVersions: 'followups.flows.versions',
  FlowRollback: 'followups.flows.rollback',
  EnrollmentList: 'followups.enrollments.list',
  EnrollmentCreate: 'followups.enrollments.create',
  EnrollmentGet: 'followups.enrollments.get',
  EnrollmentControl: 'followups.enrollments.control',
  EffectDecide: 'followups.effects.decide',
  EffectList: 'followups.effects.list',
  RetentionRun: 'followups.retention.run',
  FlowStats: 'followups.flows.stats',
  BulkJobCreate: 'followups.bulk_jobs.create',
  BulkJobGet: 'followups.bulk_jobs.get',
  PromiseList: 'followups.promises.list',
  PromiseCreate: 'followups.promises.create',
  PromiseGet: 'followups.promises.get',
  PromiseCancel: 'followups.promises.cancel',
  PromiseResolve: 'followups.promises.resolve',
  EffectResolve: 'followups.effects.resolve',
  QueueList: 'followups.queue.list',
  SettingsGet: 'followups.settings.get',
  SettingsUpdate: 'followups.settings.update',
  SettingsSetEntitlement: 'followups.settings.set_entitlement',
} as const;

/** Every input carries the caller's organization (set by the gateway, never by the client). */
interface Scoped {
  organization_id: string;
}

export interface FlowCreateData extends Scoped {
  name: string;
  graph: FlowGraph;
  settings: FlowSettings;
}
export interface FlowCreateFromModelData extends Scoped {
  model_id: string;
  name?: string;
  stage_id?: string;
}
export interface FlowRef extends Scoped {
  flow_id: string;
}
export interface FlowUpdateData extends FlowRef {
  expected_revision: number;
  name: string;
  graph: FlowGraph;
  settings: FlowSettings;
}
export interface FlowSetStatusData extends FlowRef {
  expected_revision: number;
  status: 'active' | 'paused' | 'archived';
}
export interface FlowPublishData extends FlowRef {
  expected_revision: number;
}
export interface FlowRollbackData extends FlowRef {
  expected_revision: number;
  version_id: string;
}
export interface EnrollmentListData extends Scoped {
  flow_id?: string;
  contact_id?: string;
  status?: FollowupEnrollmentStatus;
  /** 1–200, default 100 (seed 002). */
  limit?: number;
  cursor?: string;
}
export interface EnrollmentCreateData extends Scoped {
  flow_id: string;
  contact_id: string;
  conversation_id?: string;
  operation_key: string;
  agent_id?: string;
  appointment_id?: string;
  /** Values for `{{vars.<key>}}`. */
  variables?: Record<string, string | number | boolean>;
  /** The moment `{{anchor.*}}` names (an appointment's start), ISO-8601. */
  anchor_at?: string;
  /** The enrollment's own number: the first link of the sending-number chain (seed 000 "number"). */
  sender_id?: string;
}
export interface FollowupEnrollmentRef extends Scoped {
  enrollment_id: string;
}
export interface EnrollmentControlData extends FollowupEnrollmentRef {
  expected_revision: number;
  action: EnrollmentControlAction;
  reason?: string;
}
export interface QueueListData extends Scoped {
  kind?: 'enrollment' | 'promise';
  flow_id?: string;
  status?: string;
  /** Up to 100 characters, matched against contact name/phone and flow name. */
  q?: string;
  contact_id?: string;
  cursor?: string;
  /** 1–100, default 30 (seed 002). */
  limit?: number;
}
export interface SettingsUpdateData extends Scoped, FollowupSettingsUpdate {
  expected_revision: number;
}
/** `PUT /ai/followups/settings/entitlement` (admin or billing): turns the organization's follow-ups on or off. */
export interface SettingsEntitlementData extends Scoped {
  followups_enabled: boolean;
}

/**
 * Who acted through the API: the key and the member who created it (the gateway sets both from the
 * authenticated key; an approval is re-checked against them before the send).
 */
export interface FollowupActor {
  api_key_id: string;
  member_id: string;
}

/** `POST /ai/followups/effects/{id}/decision` (seed 002 "Efeitos"). */
export interface EffectDecisionData extends Scoped, FollowupActor {
  effect_id: string;
  approve: boolean;
}
/** Answer of a decision: `{ok, id, status}` (seed 002). */
export interface EffectDecisionView {
  ok: true;
  id: string;
  status: EffectStatus;
}

/**
 * Statuses `GET /ai/followups/effects` lists by: today only the sends waiting for a person's
 * decision (flows with `require_approval`), the list the console's approval page reads.
 */
export const EFFECT_LIST_STATUSES = ['awaiting_decision'] as const;
export type EffectListStatus = (typeof EFFECT_LIST_STATUSES)[number];
/** List bounds of `GET /ai/followups/effects` (as the queue: limit 1–100, default 30). */
export const EFFECT_LIST_DEFAULT_LIMIT = 30;
export const EFFECT_LIST_MAX_LIMIT = 100;

/** `GET /ai/followups/effects`: effects of one status, oldest first, cursor-paged. */
export interface EffectListData extends Scoped {
  status: EffectListStatus;
  flow_id?: string;
  cursor?: string;
  /** 1–100, default 30. */
  limit?: number;
}

/** One row of `GET /ai/followups/effects`: the effect, with the flow and contact it belongs to. */
export interface EffectListItemView extends EffectView {
  flow_id: string;
  flow_name: string;
  version_id: string;
  contact_id: string;
  contact_name: string | null;
  contact_phone: string | null;
}

/** Outcomes of reconciling an uncertain send (seed 002 "Efeitos"). */
export const EFFECT_RESOLUTION_OUTCOMES = ['sent', 'rejected', 'cancelled'] as const;
export type EffectResolutionOutcome = (typeof EFFECT_RESOLUTION_OUTCOMES)[number];
/** Evidence note bounds of a reconciliation, characters (seed 002: note 10–2,000). */
export const RESOLUTION_NOTE_MIN = 10;
export const RESOLUTION_NOTE_MAX = 2000;

/** `POST /ai/followups/effects/{id}/resolve`. */
export interface EffectResolveData extends Scoped, FollowupActor {
  effect_id: string;
  outcome: EffectResolutionOutcome;
  note: string;
  wamid?: string;
}

// ---------------------------------------------------------------------------------------------
// One-off returns (seed 002 "Retornos avulsos")
// ---------------------------------------------------------------------------------------------

/** Statuses of a one-off return (seed 002). */
export const PROMISE_STATUSES = ['scheduled', 'turn_enqueued', 'template_pending', 'template_dispatching', 'alerted', 'completed', 'skipped', 'failed', 'unknown', 'cancelled'] as const;
export type PromiseStatus = (typeof PROMISE_STATUSES)[number];
/** Not fired yet or still on its way: a contact has at most one (409 `already_pending`). */
export const PENDING_PROMISE_STATUSES: readonly PromiseStatus[] = ['scheduled', 'turn_enqueued', 'template_pending', 'template_dispatching'];
/** What happens when the return falls due outside the 24-hour window (seed 002). */
export const PROMISE_OUTSIDE_WINDOW = ['alert', 'template'] as const;
export type PromiseOutsideWindow = (typeof PROMISE_OUTSIDE_WINDOW)[number];
/** List bounds (seed 002 "GET /ai/followups/promises": limit 1–100, default 30; q up to 100). */
export const PROMISE_LIST_DEFAULT_LIMIT = 30;
export const PROMISE_LIST_MAX_LIMIT = 100;

export interface PromiseView {
  id: string;
  customer_id: string;
  contact_id: string;
  conversation_id: string | null;
  agent_id: string | null;
  operation_key: string;
  reason: string;
  promise: string;
  /** As asked, ISO-8601. */
  promised_at: string;
  /** The effective time it fires (the promised time, not before creation, moved into the send window). */
  due_at: string;
  outside_window: PromiseOutsideWindow;
  /** The approved template for `template` (default: the organization's first approved template). */
  template: FlowTemplateRef | null;
  status: PromiseStatus;
  last_error: string | null;
  cancel_reason: string | null;
  fired_at: string | null;
  created_at: string;
  updated_at: string;
}

/** `GET /ai/followups/promises/{id}`: the return with its contact, agent, the turn it fired and the alert. */
export interface PromiseDetailView extends PromiseView {
  contact: { id: string; name: string | null; phone: string | null };
  agent: { id: string; name: string | null } | null;
  /** The turn (resume or template send) it fired, with why it was skipped when it was. */
  run: { ai_run_id: string | null; message_key: string | null; skip_reason: string | null; usage: Record<string, unknown> | null } | null;
  /** The team notification of `outside_window: alert`. */
  alert: { notification_id: string | null; notified_at: string } | null;
  /** How an `unknown` template send was reconciled. */
  resolution: Record<string, unknown> | null;
}

export interface PromiseCreateData extends Scoped {
  contact_id: string;
  conversation_id?: string;
  agent_id?: string;
  operation_key: string;
  /** 1–500 characters. */
  reason: string;
  /** 1–1,000 characters. */
  promise: string;
  /** ISO-8601 with offset. */
  promised_at: string;
  outside_window: PromiseOutsideWindow;
  template?: FlowTemplateRef;
}
export interface PromiseListData extends Scoped {
  status?: PromiseStatus;
  q?: string;
  contact_id?: string;
  cursor?: string;
  limit?: number;
}
export interface PromiseRef extends Scoped {
  promise_id: string;
}
export interface PromiseCancelData extends PromiseRef {
  reason?: string;
}
export interface PromiseResolveData extends PromiseRef, FollowupActor {
  outcome: 'sent' | 'rejected';
  note: string;
  wamid?: string;
}

/**
 * RPC the gateway answers for followups: is an approval given through this key still good — the key
 * not revoked and its creator still a member (seed 002 "A aprovação perde o efeito…").
 */
export const GatewayApprovalRpc = {
  Check: 'gateway.followups.approval_check',
} as const;
/** Data of `gateway.followups.approval_check`: the key and member a decision recorded (null when it recorded none: not valid). */
export interface ApprovalCheckData extends Scoped {
  api_key_id: string | null;
  member_id: string | null;
}
export interface ApprovalCheckView {
  valid: boolean;
  /** Why not: `key_revoked` or `member_left`; null when valid. */
  reason: 'key_revoked' | 'member_left' | null;
}

/** Answer of `followups.enrollments.get` (seed 002: enrollment, events and effects). */
export interface EnrollmentDetailView {
  enrollment: FollowupEnrollmentView;
  events: EnrollmentEventView[];
  effects: EffectView[];
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

export const FollowupsEvents = {
  /** `{flow_id, version_id, version}`. */
  FlowPublished: 'followups.flow.published',
  /** `{flow_id, status}`. */
  FlowStatusChanged: 'followups.flow.status_changed',
  /** `{enrollment_id, flow_id, contact_id}`; messaging shows it on the real-time feed. */
  EnrollmentCreated: 'followups.enrollment.created',
  /** `{enrollment_id, flow_id, contact_id, status, reason}`. */
  EnrollmentFinished: 'followups.enrollment.finished',
  /** `{enrollment_id, contact_id, conversation_id, node_id, note}`: a step handed the contact to a person. */
  HandoffRequested: 'followups.enrollment.handoff_requested',
} as const;

/** Data of `followups.flow.published`. `source_version_id`: the version a rollback republished, else null. */
export interface FollowupsFlowPublishedData {
  flow_id: string;
  version_id: string;
  version: number;
  source_version_id: string | null;
}

/** Data of `followups.flow.status_changed`. */
export interface FollowupsFlowStatusChangedData {
  flow_id: string;
  status: FlowStatus;
}

/** Data of `followups.enrollment.created`. */
export interface FollowupsEnrollmentCreatedData {
  enrollment_id: string;
  flow_id: string;
  contact_id: string;
  version_id: string;
}

/** Data of `followups.enrollment.finished`: the terminal status and why (`reason`, null when none was recorded). */
export interface FollowupsEnrollmentFinishedData {
  enrollment_id: string;
  flow_id: string;
  contact_id: string;
  status: FollowupEnrollmentStatus;
  reason: string | null;
}

/** Data of `followups.enrollment.handoff_requested`. `note`: the step's note to the person, or null. */
export interface FollowupsHandoffRequestedData {
  enrollment_id: string;
  contact_id: string;
  conversation_id: string | null;
  node_id: string;
  note: string | null;
}

// ---------------------------------------------------------------------------------------------
// Bulk enrollment jobs (seed 000 "followup_bulk_jobs")
// ---------------------------------------------------------------------------------------------

/** Contacts one job may hold (the frozen list). */
export const BULK_JOB_MAX_CONTACTS = 50_000;
export const BULK_JOB_STATUSES = ['pending', 'running', 'completed', 'failed'] as const;
export type BulkJobStatus = (typeof BULK_JOB_STATUSES)[number];

/** `contact_ids` (a list) or `segment` (frozen at creation: the contacts matching it then). */
export interface BulkJobCreateData extends Scoped {
  flow_id: string;
  operation_key: string;
  contact_ids?: string[];
  segment?: FlowTriggerFilter['segment'];
}
export interface BulkJobRef extends Scoped {
  job_id: string;
}
/** Progress of a job: `enrolled + sum(rejected) = processed ≤ total`. */
export interface BulkJobView {
  id: string;
  customer_id: string;
  flow_id: string;
  operation_key: string;
  source: 'list' | 'segment';
  status: BulkJobStatus;
  total: number;
  processed: number;
  enrolled: number;
  /** Refusals by reason: already_enrolled, opted_out, plan_limit, contact_erased… */
  rejected: Record<string, number>;
  last_error: string | null;
  /**
   * Claims of the job since its last chunk that went through (the claim running now included); a
   * job whose chunk fails on its FOLLOWUP_BULK_MAX_ATTEMPTS-th attempt ends `failed`, with `last_error`.
   */
  attempts: number;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

/** `GET /ai/followup-flows/{id}/stats`: one flow's results. */
export interface FlowStatsView {
  flow_id: string;
  enrolled: number;
  /** Live now (any live status). */
  active: number;
  completed: number;
  /** Cancelled or dead enrollments by reason (opted_out, handoff, flow_archived, too_many_failures…). */
  stopped: Record<string, number>;
  /** Send effects by status (queued, sent, failed, cancelled, skipped, uncertain, awaiting_decision, rejected…). */
  sends: Record<string, number>;
  /** Enrollments with at least one send queued or sent. */
  enrollments_with_send: number;
  /** Of those, the ones whose contact replied after the first send. */
  replied: number;
  /** replied / enrollments_with_send (4 decimals), null with no send yet. */
  reply_rate: number | null;
  /** Median time from the first send to the first reply after it, seconds; null with no reply. */
  median_time_to_reply_seconds: number | null;
}

/** What a retention pass deleted (`ran: false`: another pass held the lock; nothing was done). */
export interface RetentionReport {
  ran: boolean;
  enrollments: number;
  events: number;
  effects: number;
  promises: number;
  triggers: number;
  bulk_jobs: number;
}

// ---------------------------------------------------------------------------------------------
// CRM events (rule triggers): any CRM publishes these on the bus and followups' rules react
// ---------------------------------------------------------------------------------------------

/** Events a CRM publishes so `lead_created`, `lead_status_changed` and `deal_stage_changed` rules fire (seed 000 "Trigger hooks"). */
export const CrmEvents = {
  /** `CrmLeadEventData` */
  LeadCreated: 'crm.lead.created',
  /** `CrmLeadEventData` with `status` (and `previous_status`). */
  LeadStatusChanged: 'crm.lead.status_changed',
  /** `CrmDealEventData`. */
  DealStageChanged: 'crm.deal.stage_changed',
} as const;

/** How a CRM says a lead ended (seed 000 "Stop hooks": a closed lead stops the contact's follow-ups). */
export const CRM_LEAD_CLOSED = ['won', 'lost'] as const;
export type CrmLeadClosed = (typeof CRM_LEAD_CLOSED)[number];

export interface CrmLeadEventData {
  lead_id: string;
  /** The messaging contact the lead is. */
  contact_id: string;
  status?: string;
  previous_status?: string | null;
  /** Set when this status closes the lead; its live enrollments stop with reason `lead_won` / `lead_lost`. */
  closed?: CrmLeadClosed | null;
  /** The CRM's own id of the event (its idempotency key at the ingress). */
  crm_event_id?: string;
  /** ISO-8601 instant the CRM saw it happen. */
  crm_occurred_at?: string;
}
export interface CrmDealEventData {
  deal_id: string;
  contact_id: string;
  stage_id: string;
  previous_stage_id?: string | null;
  crm_event_id?: string;
  crm_occurred_at?: string;
}

/** The kinds of CRM event the ingress takes (`POST /crm/events`, `POST /webhooks/crm`). */
export const CRM_EVENT_TYPES = ['lead.created', 'lead.status_changed', 'deal.stage_changed'] as const;
export type CrmEventType = (typeof CRM_EVENT_TYPES)[number];

/**
 * A CRM event for messaging to resolve and publish (RPC `messaging.crm.ingest`). The contact is
 * named by `contact_id`, or found by `email` / `phone` among the organization's contacts.
 */
export interface CrmEventIngestData {
  organization_id: string;
  /** The CRM's id of this event: the same id is published once (replays answer `duplicate: true`). */
  event_id: string;
  type: CrmEventType;
  contact: { contact_id?: string; email?: string; phone?: string };
  lead_id?: string;
  status?: string;
  previous_status?: string | null;
  closed?: CrmLeadClosed | null;
  deal_id?: string;
  stage_id?: string;
  previous_stage_id?: string | null;
  /** ISO-8601 instant the CRM saw it happen; defaults to when it was received. */
  occurred_at?: string;
}

/** What the ingress answers: the published bus event, the contact it resolved, and whether it was a replay. */
export interface CrmEventIngestResult {
  event_id: string;
  type: CrmEventType;
  contact_id: string;
  duplicate: boolean;
  received_at: string;
}

/**
 * A flow's `settings.trigger` beyond `manual` (a rule): `kind` plus its filter —
 * `tag` (tag_added: that tag only), `keywords` (inbound_keyword: whole words, accent- and
 * case-insensitive), `status` (lead_status_changed), `stage_id` (deal_stage_changed) — and
 * `segment`, conditions on the contact (`contact.tags`, `contact.name|phone|email`,
 * `contact.fields.<key>`) compiled to SQL.
 */
export interface FlowTriggerFilter {
  tag?: string;
  keywords?: string[];
  status?: string;
  stage_id?: string;
  segment?: { match: 'all' | 'any'; rules: { field: string; op: string; value?: string | number | boolean | (string | number)[] }[] };
}
