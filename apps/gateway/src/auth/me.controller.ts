import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { API_SCOPES, type ApiScope, MEMBER_ROLES, type MemberRole } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from './auth.decorators.js';

class KeyCreatorDto {
  @ApiProperty({ format: 'uuid', example: '3a9c1e5b-7d2f-4b8e-a6c4-1f0e9d8c7b21' })
  member_id!: string;

  @ApiProperty({ enum: MEMBER_ROLES, example: 'admin' })
  role!: MemberRole;

  @ApiProperty({ description: 'Whether the member is still in the organization; always true here, since a key whose creator left is refused (403)', example: true })
  active!: boolean;
}

class MeDto {
  @ApiProperty({ format: 'uuid', description: 'Your organization: pass it as `customer_id` where a route asks for one', example: '6f1c2a4e-8b7d-4c3e-9a1f-2d5e8b7c4a10' })
  organization_id!: string;

  @ApiProperty({ format: 'uuid', example: '8d7c6b5a-4f3e-4d2c-9b1a-0f9e8d7c6b5a' })
  api_key_id!: string;

  @ApiProperty({ enum: API_SCOPES, isArray: true, example: ['admin', 'messaging:read'] })
  scopes!: ApiScope[];

  @ApiProperty({ type: KeyCreatorDto })
  created_by!: KeyCreatorDto;
}

/** `GET /me`: who the key is, so a client learns its `customer_id`. */
@ApiTags('auth')
@Controller('me')
export class MeController {
  @Get()
  @RequireKey()
  @ApiOperation({ summary: 'The calling API key: its organization, scopes and creator' })
  @ApiOkResponse({ type: MeDto })
  me(@CurrentCaller() caller: Caller): MeDto {
    return {
      organization_id: caller.organizationId,
      api_key_id: caller.apiKeyId,
      scopes: caller.scopes,
      created_by: { member_id: caller.createdBy.memberId, role: caller.createdBy.role, active: caller.createdBy.active },
    };
  }
}
