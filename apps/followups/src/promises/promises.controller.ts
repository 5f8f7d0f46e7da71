import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type CursorPage, type DataEnvelope, FollowupsRpc, type PromiseCancelData, type PromiseCreateData, type PromiseDetailView, type PromiseListData, type PromiseRef, type PromiseResolveData, type PromiseView } from '@touchpoint/contracts';
import { OwnedReferences, OnRpc } from '@touchpoint/runtime';
import { PromisesService } from './promises.service.js';

/** RPC edge of one-off returns (seed 002 "Retornos avulsos"). */
@Controller()
export class PromisesController {
  constructor(
    private readonly promises: PromisesService,
    private readonly references: OwnedReferences,
  ) {}

  @OnRpc(FollowupsRpc.PromiseList)
  async list(@Payload() input: PromiseListData): Promise<DataEnvelope<CursorPage<PromiseView>>> {
    return { data: await this.promises.list(input) };
  }

  /**
   * `{data, created}`: `created` is false when the operation key had one already. The contact and
   * conversation must be the caller's (404 otherwise, as for an unknown id).
   */
  @OnRpc(FollowupsRpc.PromiseCreate)
  async create(@Payload() input: PromiseCreateData): Promise<DataEnvelope<PromiseView> & { created: boolean }> {
    await this.references.require(input?.organization_id, [
      { field: 'contact_id', kind: 'contact', id: input?.contact_id },
      { field: 'conversation_id', kind: 'conversation', id: input?.conversation_id },
    ]);
    const { promise, created } = await this.promises.create(input);
    return { data: promise, created };
  }

  @OnRpc(FollowupsRpc.PromiseGet)
  async get(@Payload() input: PromiseRef): Promise<DataEnvelope<PromiseDetailView>> {
    return { data: await this.promises.get(input) };
  }

  @OnRpc(FollowupsRpc.PromiseCancel)
  async cancel(@Payload() input: PromiseCancelData): Promise<DataEnvelope<PromiseView>> {
    return { data: await this.promises.cancel(input) };
  }

  @OnRpc(FollowupsRpc.PromiseResolve)
  async resolve(@Payload() input: PromiseResolveData): Promise<DataEnvelope<{ resolved: true }>> {
    return { data: await this.promises.resolve(input) };
  }
}
