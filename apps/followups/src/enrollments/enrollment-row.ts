import type { AiRunResult, EnrollmentEventView, FollowupEnrollmentView, EffectStatus, EffectView, FlowTemplateRef, HandoffPolicy } from '@touchpoint/contracts';

/**
 * An enrollment row as the engine reads and writes it (one per contact × flow run); the columns
 * its view shows as they are come from `FollowupEnrollmentView`.
 */
export interface EnrollmentRow extends Pick<FollowupEnrollmentView, 'id' | 'flow_id' | 'version_id' | 'contact_id' | 'conversation_id' | 'agent_id' | 'appointment_id' | 'operation_key' | 'status' | 'reason' | 'node_id' | 'variables' | 'sender_id'> {
  organization_id: string;
  /** Nodes entered so far: the visit number of the current node (part of every send's key). */
  step: number;
  next_run_at: Date | null;
  node_entered_at: Date | null;
  anchor_at: Date | null;
  repeat_counts: Record<string, number>;
  last_reply_text: string | null;
  /** Inbound messages up to this instant have been taken into account (the reply backstop). */
  reply_seen_at: Date | null;
  /** Human messages up to this instant have been taken into account (the handoff backstop). */
  handoff_seen_at: Date | null;
  /** An exit the next release takes at a wait (`branch:replied`, set by the reply stop path). */
  pending_exit: string | null;
  cancel_on_reply: boolean;
  handoff_policy: HandoffPolicy;
  last_send_status: string | null;
  /** A send queued or uncertain: control answers `dispatch_busy` while set. */
  inflight_effect_id: string | null;
  sender_unavailable_since: Date | null;
  failures: number;
  last_error: string | null;
  /** First passes of AI steps so far: the fence of the model answer in flight (seed 000 "AI step"). */
  ai_attempts: number;
  /** Lease of an AI step's model call; `next_run_at` is moved to it as well. */
  locked_until: Date | null;
  /** The model's answer of an AI-written send waiting to go out, for this node and visit (see AddAiDraft). */
  ai_draft: AiDraft | null;
  revision: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/** An AI-written send's model answer, kept while the send waits. `at`: ISO instant it was answered. */
export interface AiDraft {
  node_id: string;
  step: number;
  at: string;
  result: AiRunResult;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const toEnrollmentView = (r: EnrollmentRow): FollowupEnrollmentView => ({
  id: r.id,
  customer_id: r.organization_id,
  flow_id: r.flow_id,
  version_id: r.version_id,
  contact_id: r.contact_id,
  conversation_id: r.conversation_id,
  agent_id: r.agent_id,
  appointment_id: r.appointment_id,
  operation_key: r.operation_key,
  status: r.status,
  node_id: r.node_id,
  next_run_at: iso(r.next_run_at),
  reason: r.reason,
  variables: r.variables,
  anchor_at: iso(r.anchor_at),
  sender_id: r.sender_id,
  revision: r.revision,
  failures: r.failures,
  last_error: r.last_error,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  finished_at: iso(r.finished_at),
});

export interface EffectRow {
  id: string;
  organization_id: string;
  enrollment_id: string;
  contact_id: string;
  node_id: string;
  step: number;
  kind: EffectView['kind'];
  status: EffectStatus;
  idempotency_key: string | null;
  text: string | null;
  template: FlowTemplateRef | null;
  usage: Record<string, unknown> | null;
  message_id: string | null;
  sender_id: string | null;
  reason: string | null;
  decided_at: Date | null;
  resolution: Record<string, unknown> | null;
  delivered_at: Date | null;
  read_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const toEffectView = (r: EffectRow): EffectView => ({
  id: r.id,
  enrollment_id: r.enrollment_id,
  node_id: r.node_id,
  kind: r.kind,
  status: r.status,
  text: r.text,
  template: r.template,
  usage: r.usage,
  message_id: r.message_id,
  idempotency_key: r.idempotency_key,
  sender_id: r.sender_id,
  reason: r.reason,
  decided_at: r.decided_at ? r.decided_at.toISOString() : null,
  resolution: r.resolution ?? null,
  delivery_status: r.read_at ? 'read' : r.delivered_at ? 'delivered' : null,
  delivered_at: r.delivered_at ? r.delivered_at.toISOString() : null,
  read_at: r.read_at ? r.read_at.toISOString() : null,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

export interface EnrollmentEventRow {
  id: string;
  type: string;
  node_id: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

export const toEventView = (r: EnrollmentEventRow): EnrollmentEventView => ({ id: String(r.id), type: r.type, node_id: r.node_id, data: r.data, created_at: r.created_at.toISOString() });

/** A timeline entry to write (enrollment_events). */
export interface NewEnrollmentEvent {
  organization_id: string;
  enrollment_id: string;
  type: string;
  node_id: string | null;
  data: Record<string, unknown>;
  at: Date;
}

/** The key of a send: enrollment × node × visit, also the messaging and outbox key. */
export const sendKeyOf = (enrollmentId: string, nodeId: string, step: number): string => `followup:${enrollmentId}:${nodeId}:${step}`;
