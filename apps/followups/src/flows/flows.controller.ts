import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type DataEnvelope,
  type FlowCreateData,
  type FlowCreateFromModelData,
  type FlowModelView,
  type FlowPublishData,
  type FlowRef,
  type FlowRollbackData,
  type FlowSetStatusData,
  type FlowUpdateData,
  type FlowVersionView,
  type FlowView,
  FollowupsRpc,
} from '@touchpoint/contracts';
import { OwnedReferences, type Reference, OnRpc } from '@touchpoint/runtime';
import { check } from '../input-checks/input-checks.js';
import { FlowsService } from './flows.service.js';

/** RPC edge of flows (seed 002 "Fluxos"); every answer is `{data}` as the REST contract shows. */
@Controller()
export class FlowsController {
  constructor(
    private readonly flows: FlowsService,
    private readonly references: OwnedReferences,
  ) {}

  /** A fixed sender of the flow's settings must be one of the caller's (404 otherwise, as for an unknown id). */
  private fixedSender(input: FlowCreateData | FlowUpdateData): Promise<void> {
    const sender = (input?.settings as { sender?: { mode?: unknown; sender_id?: unknown } } | undefined)?.sender;
    const id = sender?.mode === 'fixed' && typeof sender.sender_id === 'string' ? sender.sender_id : undefined;
    const reference: Reference = { field: 'settings.sender.sender_id', kind: 'sender', id };
    return this.references.require(input?.organization_id, [reference]);
  }

  @OnRpc(FollowupsRpc.FlowList)
  async list(@Payload() input: { organization_id: string }): Promise<DataEnvelope<FlowView[]>> {
    check(input).uuid('organization_id').done();
    return { data: await this.flows.list(input.organization_id) };
  }

  @OnRpc(FollowupsRpc.FlowCreate)
  async create(@Payload() input: FlowCreateData): Promise<DataEnvelope<FlowView>> {
    await this.fixedSender(input);
    return { data: await this.flows.create(input) };
  }

  @OnRpc(FollowupsRpc.FlowModels)
  models(): DataEnvelope<FlowModelView[]> {
    return { data: this.flows.models() };
  }

  @OnRpc(FollowupsRpc.FlowCreateFromModel)
  async createFromModel(@Payload() input: FlowCreateFromModelData): Promise<DataEnvelope<FlowView>> {
    return { data: await this.flows.createFromModel(input) };
  }

  @OnRpc(FollowupsRpc.FlowGet)
  async get(@Payload() input: FlowRef): Promise<DataEnvelope<FlowView>> {
    return { data: await this.flows.get(input) };
  }

  @OnRpc(FollowupsRpc.FlowUpdate)
  async update(@Payload() input: FlowUpdateData): Promise<DataEnvelope<FlowView>> {
    await this.fixedSender(input);
    return { data: await this.flows.update(input) };
  }

  @OnRpc(FollowupsRpc.FlowSetStatus)
  async setStatus(@Payload() input: FlowSetStatusData): Promise<DataEnvelope<FlowView>> {
    return { data: await this.flows.setStatus(input) };
  }

  @OnRpc(FollowupsRpc.FlowPublish)
  async publish(@Payload() input: FlowPublishData): Promise<DataEnvelope<FlowView>> {
    return { data: await this.flows.publish(input) };
  }

  @OnRpc(FollowupsRpc.FlowVersions)
  async versions(@Payload() input: FlowRef): Promise<DataEnvelope<FlowVersionView[]>> {
    return { data: await this.flows.versions(input) };
  }

  @OnRpc(FollowupsRpc.FlowRollback)
  async rollback(@Payload() input: FlowRollbackData): Promise<DataEnvelope<FlowView>> {
    return { data: await this.flows.rollback(input) };
  }
}
