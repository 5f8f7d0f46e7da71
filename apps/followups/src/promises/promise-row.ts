import type { FlowTemplateRef, PromiseDetailView, PromiseOutsideWindow, PromiseStatus, PromiseView } from '@touchpoint/contracts';

/** A `promises` row (seed 002 "Retornos avulsos"). */
export interface PromiseRow {
  id: string;
  organization_id: string;
  contact_id: string;
  conversation_id: string | null;
  agent_id: string | null;
  operation_key: string;
  reason: string;
  promise: string;
  promised_at: Date;
  due_at: Date;
  outside_window: PromiseOutsideWindow;
  template: FlowTemplateRef | null;
  status: PromiseStatus;
  locked_until: Date | null;
  attempts: number;
  run: { ai_run_id: string | null; message_key: string | null; skip_reason: string | null; usage: Record<string, unknown> | null } | null;
  alert: { notification_id: string | null; notified_at: string } | null;
  resolution: Record<string, unknown> | null;
  last_error: string | null;
  cancel_reason: string | null;
  fired_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const toPromiseView = (r: PromiseRow): PromiseView => ({
  id: r.id,
  customer_id: r.organization_id,
  contact_id: r.contact_id,
  conversation_id: r.conversation_id,
  agent_id: r.agent_id,
  operation_key: r.operation_key,
  reason: r.reason,
  promise: r.promise,
  promised_at: r.promised_at.toISOString(),
  due_at: r.due_at.toISOString(),
  outside_window: r.outside_window,
  template: r.template,
  status: r.status,
  last_error: r.last_error,
  cancel_reason: r.cancel_reason,
  fired_at: iso(r.fired_at),
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

/** `agentName`: the agent's name in the registry, null when the agent is not registered. */
export const toPromiseDetail = (r: PromiseRow, contact: { name: string | null; phone: string | null } | undefined, agentName: string | null = null): PromiseDetailView => ({
  ...toPromiseView(r),
  contact: { id: r.contact_id, name: contact?.name ?? null, phone: contact?.phone ?? null },
  agent: r.agent_id ? { id: r.agent_id, name: agentName } : null,
  run: r.run,
  alert: r.alert,
  resolution: r.resolution,
});

/** The key of a return's send (messaging and the dispatcher carry it back with the outcome). */
export const promiseSendKeyOf = (promiseId: string): string => `promise:${promiseId}`;
export const PROMISE_KEY_PREFIX = 'promise:';
