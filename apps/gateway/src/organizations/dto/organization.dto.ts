import { ApiProperty } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';

/** Path of `GET /organizations/{customer_id}`. */
export class OrganizationParams {
  @ApiProperty({ format: 'uuid', description: 'Your organization id (see `GET /me`)' })
  @IsUUID('all')
  customer_id!: string;
}

/** An organization. */
export class OrganizationDto {
  @ApiProperty({ format: 'uuid' }) organization_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
}
