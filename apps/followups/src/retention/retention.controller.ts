import { Controller } from '@nestjs/common';
import { type DataEnvelope, FollowupsRpc, type RetentionReport } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { RetentionService } from './retention.service.js';

/** RPC edge of retention: `retention:run` in the CLI (and its k8s CronJob) runs a pass now. */
@Controller()
export class RetentionController {
  constructor(private readonly retention: RetentionService) {}

  @OnRpc(FollowupsRpc.RetentionRun)
  async run(): Promise<DataEnvelope<RetentionReport>> {
    return { data: await this.retention.run() };
  }
}
