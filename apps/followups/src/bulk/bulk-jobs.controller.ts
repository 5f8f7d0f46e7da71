import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type BulkJobCreateData, type BulkJobRef, type BulkJobView, type DataEnvelope, FollowupsRpc } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { BulkJobsService } from './bulk-jobs.service.js';

/** RPC edge of bulk enrollment jobs. */
@Controller()
export class BulkJobsController {
  constructor(private readonly jobs: BulkJobsService) {}

  /** `{data, created}`: `created` is false when the operation key had a job already. */
  @OnRpc(FollowupsRpc.BulkJobCreate)
  async create(@Payload() input: BulkJobCreateData): Promise<DataEnvelope<BulkJobView> & { created: boolean }> {
    const { job, created } = await this.jobs.create(input);
    return { data: job, created };
  }

  @OnRpc(FollowupsRpc.BulkJobGet)
  async get(@Payload() input: BulkJobRef): Promise<DataEnvelope<BulkJobView>> {
    return { data: await this.jobs.get(input) };
  }
}
