import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AGENT_MAX_FLOWS, type AgentCreateData, type AgentDetailView, type AgentFollowupSettings, type AgentRef, type AgentVersionCreateData, type AgentView } from '@touchpoint/contracts';
import { isUuid, notFound, poolOf, type Queryable, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { FlowsRepository } from '../flows/flows.repository.js';
import { check } from '../input-checks/input-checks.js';
import { type AgentRow, AgentsRepository, type AgentVersionRow } from './agents.repository.js';

/** Longest agent name, code points. */
export const AGENT_NAME_MAX = 200;

function followupProblems(followup: unknown): string[] {
  const f = followup as AgentFollowupSettings | undefined;
  if (!f || typeof f !== 'object') return ['followup is required: {enabled, flow_ids}'];
  const problems: string[] = [];
  if (typeof f.enabled !== 'boolean') problems.push('followup.enabled must be a boolean');
  if (!Array.isArray(f.flow_ids) || f.flow_ids.length > AGENT_MAX_FLOWS || !f.flow_ids.every(isUuid)) problems.push(`followup.flow_ids must be a list of at most ${AGENT_MAX_FLOWS} flow ids`);
  return problems;
}

export function toAgentView(r: AgentRow): AgentView {
  return { id: r.id, customer_id: r.organization_id, name: r.name, version: r.version, followup: { enabled: r.followup_enabled, flow_ids: r.flow_ids }, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() };
}

const toVersionView = (v: AgentVersionRow) => ({ version: v.version, followup: { enabled: v.followup_enabled, flow_ids: v.flow_ids }, created_at: v.created_at.toISOString() });

/**
 * The agents registry (seed 002 "Follow-ups e retornos"): an agent has a name and numbered,
 * immutable versions; the current version's `followup.enabled` and `followup.flow_ids` decide
 * whether, and into which flows, the agent may enroll contacts.
 */
@Injectable()
export class AgentsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly agents: AgentsRepository,
    private readonly flows: FlowsRepository,
    private readonly clock: Clock,
  ) {}

  /** @throws AppError validation_failed, not_found (a listed flow that is not the organization's) */
  async create(input: AgentCreateData): Promise<AgentView> {
    check(input).uuid('organization_id').string('name', 1, AGENT_NAME_MAX).custom('followup', followupProblems(input?.followup)).done();
    return this.uow.run(async (tx) => {
      const flowIds = await this.ownFlows(tx, input.organization_id, input.followup.flow_ids);
      const id = randomUUID();
      const now = this.clock.now();
      await this.agents.insertAgent(tx, { id, organization_id: input.organization_id, name: input.name.trim(), now });
      await this.agents.insertVersion(tx, { agent_id: id, version: 1, followup_enabled: input.followup.enabled, flow_ids: flowIds, now });
      return toAgentView((await this.agents.find(tx, input.organization_id, id))!);
    });
  }

  /** The organization's agents, newest first. */
  async list(input: { organization_id: string }): Promise<AgentView[]> {
    check(input).uuid('organization_id').done();
    return (await this.agents.list(poolOf(this.uow.dataSource), input.organization_id)).map(toAgentView);
  }

  /** @throws AppError not_found */
  async get(input: AgentRef): Promise<AgentDetailView> {
    check(input).uuid('organization_id').uuid('agent_id').done();
    const db = poolOf(this.uow.dataSource);
    const row = await this.agents.find(db, input.organization_id, input.agent_id);
    if (!row) throw notFound('agent');
    return { ...toAgentView(row), versions: (await this.agents.versions(db, row.id)).map(toVersionView) };
  }

  /** A new version (the next number) becomes the current one; earlier versions stay as they were. @throws AppError validation_failed, not_found */
  async createVersion(input: AgentVersionCreateData): Promise<AgentView> {
    check(input).uuid('organization_id').uuid('agent_id').string('name', 1, AGENT_NAME_MAX, true).custom('followup', followupProblems(input?.followup)).done();
    return this.uow.run(async (tx) => {
      const agent = await this.agents.find(tx, input.organization_id, input.agent_id, true);
      if (!agent) throw notFound('agent');
      const flowIds = await this.ownFlows(tx, input.organization_id, input.followup.flow_ids);
      const now = this.clock.now();
      await this.agents.insertVersion(tx, { agent_id: agent.id, version: agent.version + 1, followup_enabled: input.followup.enabled, flow_ids: flowIds, now });
      await this.agents.setCurrent(tx, agent.id, agent.version + 1, input.name?.trim() || agent.name, now);
      return toAgentView((await this.agents.find(tx, input.organization_id, agent.id))!);
    });
  }

  /**
   * Whether the agent may enroll a contact into the flow, by its current version (seed 002: the
   * version must have `followup.enabled` and list the flow in `followup.flow_ids`).
   * @throws AppError not_found (no such agent in the organization), agent_followup_disabled (422),
   *   flow_not_allowed_for_agent (422)
   */
  async assertMayEnroll(db: Queryable, organizationId: string, agentId: string, flowId: string): Promise<AgentRow> {
    const agent = await this.agents.find(db, organizationId, agentId);
    if (!agent) throw notFound('agent');
    if (!agent.followup_enabled) throw new AppError(ErrorCode.AgentFollowupDisabled, `follow-ups are not enabled for agent "${agent.name}" (version ${agent.version})`, { agent_id: agent.id, version: agent.version });
    if (!agent.flow_ids.includes(flowId)) throw new AppError(ErrorCode.FlowNotAllowedForAgent, `agent "${agent.name}" (version ${agent.version}) may not enroll into this flow; list it in followup.flow_ids`, { agent_id: agent.id, version: agent.version, flow_id: flowId });
    return agent;
  }

  /** The listed flows, deduplicated, each the organization's. @throws AppError not_found naming the first unknown one */
  private async ownFlows(tx: Tx, organizationId: string, flowIds: string[]): Promise<string[]> {
    const unique = [...new Set(flowIds.map((f) => f.toLowerCase()))];
    for (const flowId of unique) {
      if (!(await this.flows.find(tx, organizationId, flowId))) throw new AppError(ErrorCode.NotFound, 'flow not found', { field: 'followup.flow_ids', flow_id: flowId });
    }
    return unique;
  }
}
