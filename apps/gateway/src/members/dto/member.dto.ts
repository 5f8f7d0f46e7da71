import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';
import { MEMBER_ROLES, type MemberRole } from '@touchpoint/contracts';
import { ListEnvelope } from '../../http/openapi-envelopes.js';

/** Path of `DELETE /members/{member_id}`. */
export class MemberIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all')
  member_id!: string;
}

/** A member of the organization. */
export class MemberDto {
  @ApiProperty({ format: 'uuid', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) id!: string;
  @ApiProperty({ format: 'uuid', example: '00000002-1a2b-4c3d-8e4f-000000000002' }) organization_id!: string;
  @ApiProperty({ example: 'ana@example.com' }) email!: string;
  @ApiPropertyOptional({ type: String, nullable: true, example: 'Ana Souza' }) name!: string | null;
  @ApiProperty({ enum: MEMBER_ROLES }) role!: MemberRole;
  @ApiProperty({ description: 'False once the member has left or was removed', example: true }) active!: boolean;
}

/** Answer of `GET /members`. */
@ListEnvelope()
export class MemberListDto {
  @ApiProperty({ type: MemberDto, isArray: true })
  items!: MemberDto[];
}

/** Answer of `DELETE /members/{member_id}`: the member, now inactive, and the keys revoked with them. */
export class RemovedMemberDto extends MemberDto {
  @ApiProperty({ type: String, isArray: true, description: 'Ids of the API keys of this member revoked by the removal' })
  revoked_api_key_ids!: string[];
}
