import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type OutboxAmbiguousListData, type OutboxResolveData, OutboxRpc } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { ResolutionService } from './resolution.service.js';

/**
 * RPC edge of ambiguous-send triage (seed 004 "Ambiguity is resolved by correlation"): the list and
 * the operator's resolution, answered with outcomes for the admin CLI and with errors for the REST
 * API; both resolve through `ResolutionService.resolveByOperator`.
 */
@Controller()
export class AmbiguousController {
  constructor(private readonly resolution: ResolutionService) {}

  @OnRpc(OutboxRpc.ListAmbiguous)
  list(@Payload() data: OutboxAmbiguousListData) {
    return this.resolution.listAmbiguous(data ?? {});
  }

  @OnRpc(OutboxRpc.ResolveAmbiguous)
  resolve(@Payload() data: OutboxResolveData) {
    return this.resolution.resolveByOperator(data);
  }

  @OnRpc(OutboxRpc.ResolveAmbiguousOrFail)
  resolveOrFail(@Payload() data: OutboxResolveData) {
    return this.resolution.resolveByOperatorOrFail(data);
  }
}
