import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { ApiKeysService } from './api-keys.service.js';
import { ApiKeyIdParams, ApiKeyListDto, CreateApiKeyDto, CreatedApiKeyDto, RevokedApiKeyDto } from './dto/api-key.dto.js';

/**
 * Key management over HTTP for admins: scope `admin` and a key created by an admin, checked on
 * every call. A new key's creator is the calling key's creator, and a key made with an
 * impersonation key is one too.
 */
@ApiTags('api keys')
@Controller('api-keys')
@RequireKey({ scopes: [Scope.Admin], adminCreatedKey: true })
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Get()
  @ApiOperation({ summary: "The organization's API keys (revoked ones included; never the secrets)" })
  @ApiOkResponse({ type: ApiKeyListDto })
  async list(@CurrentCaller() caller: Caller): Promise<ApiKeyListDto> {
    return { items: await this.apiKeys.list(caller.organizationId) };
  }

  @Post()
  @ApiOperation({ summary: 'Creates an API key; the secret is in this answer only' })
  @ApiCreatedResponse({ type: CreatedApiKeyDto })
  @ApiErrorResponses(400, 413, 415)
  async create(@CurrentCaller() caller: Caller, @Body() body: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    const { key, secret } = await this.apiKeys.create({
      organizationId: caller.organizationId,
      createdByMemberId: caller.createdBy.memberId,
      name: body.name,
      scopes: body.scopes,
      impersonatedBy: caller.impersonatedBy,
    });
    return { ...key, secret };
  }

  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Revokes an API key at once (idempotent)' })
  @ApiOkResponse({ type: RevokedApiKeyDto })
  @ApiErrorResponses(400, 404)
  async revoke(@CurrentCaller() caller: Caller, @Param() params: ApiKeyIdParams): Promise<RevokedApiKeyDto> {
    const key = await this.apiKeys.revoke(params.id, caller.organizationId);
    return { api_key_id: key.id, revoked: true, revoked_at: key.revoked_at as string };
  }
}
