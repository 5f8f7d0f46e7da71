/**
 * The agents registry and turn promises (seed 002 "Follow-ups e retornos": an agent enrolls
 * contacts only when its version has `followup.enabled`, into the flows of `followup.flow_ids`;
 * `GET /ai/promises` is the read-only record of what an agent said it would do in a turn). Owned
 * by followups, reached by RPC from the gateway.
 */

/** RPC patterns of the agents registry (followups answers them). */
export const AgentsRpc = {
  /** `AgentCreateData` → `{data: AgentView}` */
  AgentCreate: 'followups.agents.create',
  /** `{organization_id}` → `{data: AgentView[]}` */
  AgentList: 'followups.agents.list',
  /** `AgentRef` → `{data: AgentDetailView}` */
  AgentGet: 'followups.agents.get',
  /** `AgentVersionCreateData` → `{data: AgentView}`: a new version becomes the current one. */
  AgentVersionCreate: 'followups.agents.versions.create',
  /** `TurnPromisesRecordData` → `{data: TurnPromiseView[], created}` */
  TurnPromisesRecord: 'followups.turn_promises.record',
  /** `TurnPromiseListData` → `{data: CursorPage<TurnPromiseView>}` */
  TurnPromiseList: 'followups.turn_promises.list',
} as const;

/** Most flows one agent version may list. */
export const AGENT_MAX_FLOWS = 100;
/** Most promises recorded for one turn. */
export const TURN_MAX_PROMISES = 20;
/** Longest promise text, code points. */
export const TURN_PROMISE_TEXT_MAX = 1000;
/** List bounds of `GET /ai/promises` (the same as the other seed-002 cursor lists: 1–100, default 30). */
export const TURN_PROMISE_LIST_DEFAULT_LIMIT = 30;
export const TURN_PROMISE_LIST_MAX_LIMIT = 100;

/** What an agent version allows the follow-up tools to do. */
export interface AgentFollowupSettings {
  enabled: boolean;
  /** The flows this agent may enroll contacts into. */
  flow_ids: string[];
}

export interface AgentCreateData {
  organization_id: string;
  name: string;
  followup: AgentFollowupSettings;
}
export interface AgentRef {
  organization_id: string;
  agent_id: string;
}
export interface AgentVersionCreateData extends AgentRef {
  /** A new name, or the current one. */
  name?: string;
  followup: AgentFollowupSettings;
}

export interface AgentView {
  id: string;
  customer_id: string;
  name: string;
  /** The current version's number (1, 2, …). */
  version: number;
  followup: AgentFollowupSettings;
  created_at: string;
  updated_at: string;
}
export interface AgentVersionView {
  version: number;
  followup: AgentFollowupSettings;
  created_at: string;
}
export interface AgentDetailView extends AgentView {
  /** Every version, newest first. */
  versions: AgentVersionView[];
}

export interface TurnPromisesRecordData extends AgentRef {
  /** The agent runtime's id of the turn: recording the same turn again returns what it recorded. */
  turn_id: string;
  contact_id: string;
  conversation_id?: string;
  promises: { text: string; due_at?: string }[];
}
export interface TurnPromiseView {
  id: string;
  customer_id: string;
  agent_id: string;
  agent_name: string | null;
  turn_id: string;
  /** Order of the promise within its turn (0, 1, …). */
  position: number;
  contact_id: string;
  conversation_id: string | null;
  text: string;
  /** When the agent said it would act, if it said (UTC). */
  due_at: string | null;
  created_at: string;
}
export interface TurnPromiseListData {
  organization_id: string;
  agent_id?: string;
  contact_id?: string;
  turn_id?: string;
  cursor?: string;
  limit?: number;
}
