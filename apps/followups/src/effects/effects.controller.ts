import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type CursorPage, type DataEnvelope, type EffectDecisionData, type EffectDecisionView, type EffectListData, type EffectListItemView, type EffectResolveData, FollowupsRpc } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { EffectsService } from './effects.service.js';

/** RPC edge of effects (seed 002 "Efeitos"). */
@Controller()
export class EffectsController {
  constructor(private readonly effects: EffectsService) {}

  @OnRpc(FollowupsRpc.EffectDecide)
  async decide(@Payload() input: EffectDecisionData): Promise<DataEnvelope<EffectDecisionView>> {
    return { data: await this.effects.decide(input) };
  }

  @OnRpc(FollowupsRpc.EffectList)
  async list(@Payload() input: EffectListData): Promise<DataEnvelope<CursorPage<EffectListItemView>>> {
    return { data: await this.effects.list(input) };
  }

  @OnRpc(FollowupsRpc.EffectResolve)
  async resolve(@Payload() input: EffectResolveData): Promise<DataEnvelope<{ resolved: true }>> {
    return { data: await this.effects.resolve(input) };
  }
}
