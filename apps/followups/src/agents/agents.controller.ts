import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type AgentCreateData, type AgentDetailView, type AgentRef, AgentsRpc, type AgentVersionCreateData, type AgentView, type CursorPage, type DataEnvelope, type TurnPromiseListData, type TurnPromisesRecordData, type TurnPromiseView } from '@touchpoint/contracts';
import { OwnedReferences, OnRpc } from '@touchpoint/runtime';
import { AgentsService } from './agents.service.js';
import { TurnPromisesService } from './turn-promises.service.js';

/** RPC edge of the agents registry and turn promises (seed 002). */
@Controller()
export class AgentsController {
  constructor(
    private readonly agents: AgentsService,
    private readonly turnPromises: TurnPromisesService,
    private readonly references: OwnedReferences,
  ) {}

  @OnRpc(AgentsRpc.AgentCreate)
  async create(@Payload() input: AgentCreateData): Promise<DataEnvelope<AgentView>> {
    return { data: await this.agents.create(input) };
  }

  @OnRpc(AgentsRpc.AgentList)
  async list(@Payload() input: { organization_id: string }): Promise<DataEnvelope<AgentView[]>> {
    return { data: await this.agents.list(input) };
  }

  @OnRpc(AgentsRpc.AgentGet)
  async get(@Payload() input: AgentRef): Promise<DataEnvelope<AgentDetailView>> {
    return { data: await this.agents.get(input) };
  }

  @OnRpc(AgentsRpc.AgentVersionCreate)
  async createVersion(@Payload() input: AgentVersionCreateData): Promise<DataEnvelope<AgentView>> {
    return { data: await this.agents.createVersion(input) };
  }

  /** The contact and conversation must be the caller's (404 otherwise, as for an unknown id). */
  @OnRpc(AgentsRpc.TurnPromisesRecord)
  async record(@Payload() input: TurnPromisesRecordData): Promise<DataEnvelope<TurnPromiseView[]> & { created: boolean }> {
    await this.references.require(input?.organization_id, [
      { field: 'contact_id', kind: 'contact', id: input?.contact_id },
      { field: 'conversation_id', kind: 'conversation', id: input?.conversation_id },
    ]);
    const { promises, created } = await this.turnPromises.record(input);
    return { data: promises, created };
  }

  @OnRpc(AgentsRpc.TurnPromiseList)
  async listPromises(@Payload() input: TurnPromiseListData): Promise<DataEnvelope<CursorPage<TurnPromiseView>>> {
    return { data: await this.turnPromises.list(input) };
  }
}
