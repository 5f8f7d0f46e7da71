import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type AbuseCheckBatchAnswer, type AbuseCheckBatchData, type AbuseCheckData, AbuseRpc, type AbuseVerdict } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { OnRpc } from '@touchpoint/runtime';
import { AbuseCheckService } from './abuse-check.service.js';

/** RPC edge of the abuse service. */
@Controller()
export class AbuseController {
  constructor(private readonly service: AbuseCheckService) {}

  @OnRpc(AbuseRpc.Check)
  check(@Payload() data: AbuseCheckData): Promise<AbuseVerdict> {
    return this.service.check(data);
  }

  @OnRpc(AbuseRpc.CheckBatch)
  async checkBatch(@Payload() data: AbuseCheckBatchData): Promise<AbuseCheckBatchAnswer> {
    if (!Array.isArray(data?.checks)) throw new AppError(ErrorCode.ValidationFailed, 'checks must be a list', { field: 'checks' });
    return { outcomes: await this.service.checkBatch(data.checks) };
  }

  @OnRpc(AbuseRpc.ListActions)
  async listActions(@Payload() data: { organization_id: string; contact_id?: string; active_only?: boolean }) {
    return { items: await this.service.listActions(data.organization_id, data.contact_id, data.active_only ?? false) };
  }

  @OnRpc(AbuseRpc.ActiveRestriction)
  async activeRestriction(@Payload() data: { organization_id: string; contact_id: string }) {
    return { restriction: await this.service.activeRestriction(data?.organization_id, data?.contact_id) };
  }

  @OnRpc(AbuseRpc.ListConfig)
  async listConfig(@Payload() data: { organization_id?: string }) {
    return { items: await this.service.listConfig(data?.organization_id) };
  }
}
