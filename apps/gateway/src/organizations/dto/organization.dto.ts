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
  @ApiProperty({ format: 'uuid', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) id!: string;
  @ApiProperty({ example: 'Acme Ltda' }) name!: string;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
}
