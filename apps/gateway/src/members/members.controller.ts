import { Controller, Delete, Get, HttpCode, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { MemberIdParams, MemberListDto, RemovedMemberDto } from './dto/member.dto.js';
import { MembersService } from './members.service.js';

/**
 * Members over HTTP for admins (scope `admin`, so the key's creator must be an admin at call time).
 * Adding members and changing roles stay with the admin CLI (`member:add`).
 */
@ApiTags('members')
@Controller('members')
@RequireKey({ scopes: [Scope.Admin] })
export class MembersController {
  constructor(private readonly members: MembersService) {}

  @Get()
  @ApiOperation({ summary: "The organization's members, those who left included" })
  @ApiOkResponse({ type: MemberListDto })
  async list(@CurrentCaller() caller: Caller): Promise<MemberListDto> {
    return { items: await this.members.list(caller.organizationId) };
  }

  @Delete(':member_id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Removes a member: they leave the organization and every API key they created is revoked at once (idempotent)' })
  @ApiOkResponse({ type: RemovedMemberDto })
  @ApiErrorResponses(400, 404)
  remove(@CurrentCaller() caller: Caller, @Param() params: MemberIdParams): Promise<RemovedMemberDto> {
    return this.members.remove(caller.organizationId, params.member_id);
  }
}
