import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type DataEnvelope, type FlowRef, FollowupsRpc, type FlowStatsView } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { FlowStatsService } from './flow-stats.service.js';

/** RPC edge of a flow's statistics. */
@Controller()
export class FlowStatsController {
  constructor(private readonly stats: FlowStatsService) {}

  @OnRpc(FollowupsRpc.FlowStats)
  async get(@Payload() input: FlowRef): Promise<DataEnvelope<FlowStatsView>> {
    return { data: await this.stats.get(input) };
  }
}
