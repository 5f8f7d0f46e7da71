import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsString, IsUUID, Length, Matches } from 'class-validator';
import type { OutboxChannel } from '@touchpoint/contracts';
import { ListEnvelope } from '../../http/openapi-envelopes.js';

/** Body of `POST /senders`: a WhatsApp business number and its access token (stored encrypted, never returned). */
export class CreateSenderDto {
  @ApiProperty({ enum: ['whatsapp'] })
  @IsIn(['whatsapp'])
  channel!: 'whatsapp';

  @ApiProperty({ example: '100000000000002', description: 'WhatsApp phone number id (Graph)' })
  @Matches(/^\d{1,32}$/)
  phone_number_id!: string;

  @ApiProperty({ example: '5511912345678' })
  @IsString()
  @Length(4, 32)
  display_phone_number!: string;

  @ApiProperty({ example: '100000000000001', description: 'WhatsApp Business Account id' })
  @IsString()
  @Length(1, 64)
  business_account_id!: string;

  @ApiProperty({ description: 'Graph access token; write-only' })
  @IsString()
  @Length(1, 4096)
  access_token!: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  is_default?: boolean;

  @ApiPropertyOptional({ enum: ['connected', 'disconnected'] })
  @IsOptional()
  @IsIn(['connected', 'disconnected'])
  status?: 'connected' | 'disconnected';

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Length(1, 200)
  label?: string;
}

/** Body of `PATCH /senders/{sender_id}`. */
export class UpdateSenderDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @Length(4, 32) display_phone_number?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @Length(1, 64) business_account_id?: string;
  @ApiPropertyOptional({ description: 'replaces the stored token; write-only' }) @IsOptional() @IsString() @Length(1, 4096) access_token?: string;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() is_default?: boolean;
  @ApiPropertyOptional({ enum: ['connected', 'disconnected'] }) @IsOptional() @IsIn(['connected', 'disconnected']) status?: 'connected' | 'disconnected';
  @ApiPropertyOptional() @IsOptional() @IsString() @Length(1, 200) label?: string;
}

export class SenderIdParams {
  @ApiProperty() @IsUUID() sender_id!: string;
}

export class ListSendersQuery {
  @ApiPropertyOptional({ enum: ['whatsapp', 'email', 'linkedin'] }) @IsOptional() @IsIn(['whatsapp', 'email', 'linkedin']) channel?: OutboxChannel;
}

/** A sender as the API shows it (no credential). */
export class SenderDto {
  @ApiProperty({ example: '00000001-1a2b-4c3d-8e4f-000000000001' }) id!: string;
  @ApiProperty({ example: '00000002-1a2b-4c3d-8e4f-000000000002' }) organization_id!: string;
  @ApiProperty({ enum: ['whatsapp', 'email', 'linkedin'] }) channel!: string;
  @ApiPropertyOptional({ type: String, nullable: true, example: 'Main number' }) label!: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, example: '100000000000002' }) phone_number_id!: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, example: '5511912345678' }) display_phone_number!: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, example: '100000000000001' }) business_account_id!: string | null;
  @ApiProperty({ enum: ['connected', 'disconnected'] }) status!: string;
  @ApiProperty({ example: true }) is_default!: boolean;
  @ApiProperty({ description: 'a credential is stored (its value is never returned)', example: true }) has_credentials!: boolean;
  @ApiProperty({ example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
  @ApiProperty({ example: '2026-03-02T14:05:00.000Z' }) updated_at!: string;
}

@ListEnvelope()
export class SenderListDto {
  @ApiProperty({ type: SenderDto, isArray: true }) items!: SenderDto[];
}

/** Answer of `DELETE /senders/{sender_id}`. */
export class SenderRemovedDto {
  @ApiProperty({ enum: [true], example: true }) removed!: true;
}

/**
 * Body of `POST /senders/accounts`: an email mailbox (a Nylas grant) or a LinkedIn account (a
 * Unipile account) that outreach sends from (seed 003 §4.6). The API key is stored encrypted and never
 * returned; provider webhooks are routed to the organization by `account_id`.
 */
export class CreateAccountSenderDto {
  @ApiProperty({ enum: ['email', 'linkedin'] })
  @IsIn(['email', 'linkedin'])
  channel!: 'email' | 'linkedin';

  @ApiProperty({ example: 'grant-3f2a…', description: 'The Nylas grant_id (email) or the Unipile account_id (linkedin)' })
  @IsString()
  @Length(1, 200)
  account_id!: string;

  @ApiProperty({ example: 'sales@example.com', description: 'The mailbox address, or the LinkedIn member id (ACo…)' })
  @IsString()
  @Length(3, 320)
  address!: string;

  @ApiProperty({ description: 'The Nylas application API key or the Unipile X-API-KEY; write-only' })
  @IsString()
  @Length(1, 4096)
  api_key!: string;

  @ApiPropertyOptional({ example: 'google', description: 'Nylas grant provider (google, microsoft, imap, …); List-Unsubscribe headers go only on Google grants' })
  @IsOptional()
  @IsString()
  @Length(1, 40)
  provider?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @Length(1, 200)
  label?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  is_default?: boolean;
}
