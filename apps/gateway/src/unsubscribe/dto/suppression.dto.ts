import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import { OUTBOX_CHANNELS, type OutboxChannel } from '@touchpoint/contracts';
import { ListEnvelope } from '../../http/openapi-envelopes.js';

/** Query of `GET /suppressions`. */
export class ListSuppressionsQuery {
  @ApiPropertyOptional({ maxLength: 320, description: 'Part of the value or of its note, any case; phone punctuation is ignored (`+55 11 9876` finds 5511987654321)', example: 'ana@' })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  q?: string;

  @ApiPropertyOptional({ enum: OUTBOX_CHANNELS }) @IsOptional() @IsIn(OUTBOX_CHANNELS) channel?: OutboxChannel;
  @ApiPropertyOptional({ description: 'next_cursor of the previous page (of the same q and channel)' }) @IsOptional() @IsString() @MaxLength(512) cursor?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 50 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit?: number;
}

/** Body of `POST /suppressions`: an address a person puts on the do-not-contact list. */
export class AddSuppressionDto {
  @ApiProperty({ enum: OUTBOX_CHANNELS }) @IsIn(OUTBOX_CHANNELS) channel!: OutboxChannel;

  @ApiProperty({ example: 'ana@example.com', description: 'The phone number, email address or LinkedIn member id / profile URL' })
  @IsString()
  @Length(1, 320)
  value!: string;

  @ApiPropertyOptional({ maxLength: 1000, description: 'Why (kept with the row)', example: 'Asked by phone not to be contacted' })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  note?: string;
}

/** Body of `DELETE /suppressions`: the do-not-contact row to remove, and why. */
export class RemoveSuppressionDto {
  @ApiProperty({ enum: OUTBOX_CHANNELS }) @IsIn(OUTBOX_CHANNELS) channel!: OutboxChannel;

  @ApiProperty({ example: 'ana@example.com', description: 'The phone number, email address or LinkedIn member id / profile URL' })
  @IsString()
  @Length(1, 320)
  value!: string;

  @ApiProperty({ minLength: 1, maxLength: 1000, description: 'Why the address may be contacted again (kept with the removal)', example: 'She wrote asking to hear from us again' })
  @IsString()
  @Length(1, 1000)
  note!: string;
}

/** One do-not-contact row. */
export class SuppressionDto {
  @ApiProperty({ format: 'uuid', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) id!: string;
  @ApiProperty({ enum: OUTBOX_CHANNELS, example: 'email' }) channel!: string;
  @ApiProperty({ description: 'The value as the list keys it (an email lower-cased, a phone as digits)', example: 'ana@example.com' }) value!: string;
  @ApiProperty({ type: String, nullable: true, description: 'opt_out, unsubscribed, bounced (code), manual (a person)', example: 'manual' }) reason!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'Asked by phone not to be contacted' }) note!: string | null;
  @ApiProperty({ type: String, nullable: true, description: '`member:<id>` when a person added it; null when code did', example: 'member:00000002-1a2b-4c3d-8e4f-000000000002' }) added_by!: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
}

@ListEnvelope()
export class SuppressionPageDto {
  @ApiProperty({ type: [SuppressionDto] }) items!: SuppressionDto[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last', example: null }) next_cursor!: string | null;
}

export class SuppressionAddedDto {
  @ApiProperty({ enum: OUTBOX_CHANNELS, example: 'email' }) channel!: string;
  @ApiProperty({ description: 'The value as the list keys it', example: 'ana@example.com' }) value!: string;
  @ApiProperty({ description: 'false when it was on the list already (nothing changes, the first note stays)', example: true }) created!: boolean;
  @ApiProperty({ type: [String], description: 'Queued sends to it that were cancelled', example: [] }) cancelled_entry_ids!: string[];
  @ApiProperty({ description: 'Sends to it that had started before it took hold and still had no provider answer when this was answered (normally 0: the answer waits up to 0.8 s for them)', example: 0 }) in_flight!: number;
}

export class SuppressionRemovedDto {
  @ApiProperty({ description: 'false when the value was not on the list', example: true }) removed!: boolean;
  @ApiProperty({ enum: OUTBOX_CHANNELS, example: 'email' }) channel!: string;
  @ApiProperty({ description: 'The value as the list keys it (an email lower-cased, a phone as digits)', example: 'ana@example.com' }) value!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The note kept with the removal; null when nothing was removed', example: 'She wrote asking to hear from us again' }) note!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'null when nothing was removed', example: '2026-03-02T14:05:00.000Z' }) removed_at!: string | null;
}
