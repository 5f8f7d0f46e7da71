import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type ApprovalCheckData, type ApprovalCheckView, GatewayApprovalRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { OnRpc } from '@touchpoint/runtime';
import { ApiKeysService } from '../api-keys/api-keys.service.js';
import { MembersService } from '../members/members.service.js';

/**
 * Answers followups before it sends an approved follow-up: an approval given through an API key
 * loses its effect once the key is revoked or its creator leaves the organization (seed 002
 * "Efeitos"). The gateway owns keys and members, so it is the one to say. Read fresh each time.
 */
@Controller()
export class ApprovalCheckController {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly members: MembersService,
  ) {}

  @OnRpc(GatewayApprovalRpc.Check)
  async check(@Payload() input: ApprovalCheckData): Promise<ApprovalCheckView> {
    const key = (await this.apiKeys.list(input.organization_id)).find((k) => k.id === input.api_key_id);
    if (!key || key.revoked_at) return { valid: false, reason: 'key_revoked' };
    if (input.member_id === null) return { valid: false, reason: 'member_left' };
    try {
      const member = await this.members.get(input.organization_id, input.member_id);
      if (!member.active) return { valid: false, reason: 'member_left' };
    } catch (err) {
      if (err instanceof AppError && err.code === ErrorCode.NotFound) return { valid: false, reason: 'member_left' };
      throw err;
    }
    return { valid: true, reason: null };
  }
}
