import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsNotEmpty, IsString, IsUUID, MaxLength } from 'class-validator';
import { API_SCOPES, type ApiScope } from '@touchpoint/contracts';
import { API_KEY_NAME_MAX } from '../api-keys.service.js';
import { ListEnvelope } from '../../http/openapi-envelopes.js';

/** Body of `POST /api-keys`. */
export class CreateApiKeyDto {
  @ApiProperty({ example: 'crm sync', maxLength: API_KEY_NAME_MAX })
  @IsString()
  @IsNotEmpty()
  @MaxLength(API_KEY_NAME_MAX)
  name!: string;

  @ApiProperty({ enum: API_SCOPES, isArray: true, example: ['agents:read', 'agents:write'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(API_SCOPES.length)
  @IsIn(API_SCOPES, { each: true })
  scopes!: ApiScope[];
}

/** Path of `DELETE /api-keys/{id}`. */
export class ApiKeyIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all')
  id!: string;
}

/** A key as listed (never its secret). */
export class ApiKeyDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) organization_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'The first characters of the secret', example: 'tp_AbC1234' }) secret_hint!: string;
  @ApiProperty({ enum: API_SCOPES, isArray: true }) scopes!: ApiScope[];
  @ApiProperty({ format: 'uuid' }) created_by_member_id!: string;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true }) last_used_at!: string | null;
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true }) revoked_at!: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: "The support person the key was issued to, acting as its creator (an impersonated session); null for a member's own key" })
  impersonated_by!: string | null;
}

/** Answer of `POST /api-keys`: the key and its secret, shown this once. */
export class CreatedApiKeyDto extends ApiKeyDto {
  @ApiProperty({ description: 'The secret; it is not stored and cannot be shown again', example: 'tp_...' })
  secret!: string;
}

/** Answer of `GET /api-keys`. */
@ListEnvelope()
export class ApiKeyListDto {
  @ApiProperty({ type: ApiKeyDto, isArray: true })
  items!: ApiKeyDto[];
}

/** Answer of `DELETE /api-keys/{id}`. */
export class RevokedApiKeyDto {
  @ApiProperty({ format: 'uuid' }) api_key_id!: string;
  @ApiProperty({ example: true }) revoked!: true;
  @ApiProperty({ format: 'date-time' }) revoked_at!: string;
}
