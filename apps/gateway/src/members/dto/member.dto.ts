import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';
import { MEMBER_ROLES, type MemberRole } from '@touchpoint/contracts';

/** Path of `DELETE /members/{member_id}`. */
export class MemberIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all')
  member_id!: string;
}

/** A member of the organization. */
export class MemberDto {
  @ApiProperty({ format: 'uuid' }) member_id!: string;
  @ApiProperty({ format: 'uuid' }) organization_id!: string;
  @ApiProperty() email!: string;
  @ApiPropertyOptional({ nullable: true }) name!: string | null;
  @ApiProperty({ enum: MEMBER_ROLES }) role!: MemberRole;
  @ApiProperty({ description: 'False once the member has left or was removed' }) active!: boolean;
}

/** Answer of `GET /members`. */
export class MemberListDto {
  @ApiProperty({ type: MemberDto, isArray: true })
  data!: MemberDto[];
}

/** Answer of `DELETE /members/{member_id}`: the member, now inactive, and the keys revoked with them. */
export class RemovedMemberDto extends MemberDto {
  @ApiProperty({ type: String, isArray: true, description: 'Ids of the API keys of this member revoked by the removal' })
  revoked_api_key_ids!: string[];
}
