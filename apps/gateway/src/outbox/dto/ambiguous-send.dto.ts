import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, IsUUID, Length, Max, MaxLength, Min } from 'class-validator';
import { ListEnvelope } from '../../http/openapi-envelopes.js';

/** Query of `GET /outbox/ambiguous`. */
export class ListAmbiguousSendsQuery {
  @ApiPropertyOptional({ description: 'next_cursor of the previous page' }) @IsOptional() @IsString() @MaxLength(512) cursor?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 50 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit?: number;
}

export class AmbiguousEntryParams {
  @ApiProperty({ format: 'uuid', description: 'The outbox entry id (`outbox_entry_id` on the message)' }) @IsUUID('all') entry_id!: string;
}

/** Body of `POST /outbox/ambiguous/{entry_id}/resolve`. */
export class ResolveAmbiguousSendDto {
  @ApiProperty({ enum: ['accepted', 'rejected'], description: 'accepted: it reached the contact (the message becomes sent); rejected: it did not (failed)' })
  @IsIn(['accepted', 'rejected'])
  status!: 'accepted' | 'rejected';

  @ApiProperty({ maxLength: 1000, description: 'Why (kept on the entry for triage)' })
  @IsString()
  @Length(1, 1000)
  note!: string;
}

/** An ambiguous send as the API shows it (the dispatcher's entry; never a credential). */
export class AmbiguousSendDto {
  @ApiProperty({ example: '00000001-1a2b-4c3d-8e4f-000000000001' }) id!: string;
  @ApiProperty({ example: '00000002-1a2b-4c3d-8e4f-000000000002' }) organization_id!: string;
  @ApiProperty({ enum: ['whatsapp', 'email', 'linkedin'] }) channel!: string;
  @ApiProperty({ type: String, nullable: true, example: '00000003-1a2b-4c3d-8e4f-000000000003' }) sender_id!: string | null;
  @ApiProperty({ description: 'The recipient address as the requester gave it', example: '+5511987654321' }) to!: string;
  @ApiProperty({ description: 'The recipient as the outbox keys it (phone digits, a lower-cased email)', example: '5511987654321' }) pacing_key!: string;
  @ApiProperty({ example: 'order-1042-receipt' }) idempotency_key!: string;
  @ApiProperty({ example: 'text' }) payload_type!: string;
  @ApiProperty({ enum: ['ambiguous'] }) status!: string;
  @ApiProperty({ example: 1 }) attempts!: number;
  @ApiProperty({ example: 1 }) max_attempts!: number;
  @ApiProperty({ type: String, nullable: true, description: 'Always null here: no answer came', example: '2026-03-02T14:05:00.000Z' }) next_attempt_at!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjA' }) provider_message_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'lease_expired when the dispatcher stopped mid-send; else the provider code, if any', example: 'lease_expired' }) last_error_code!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'ambiguous' }) last_classification!: string | null;
  @ApiProperty({ type: String, nullable: true, description: "The provider's (or the local) reason of the last failure, when there is one", example: 'the attempt lease expired before the provider answered' }) last_error_message!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Correlation ids: message_id, conversation_id, requester…' }) log_context!: Record<string, string | number>;
  @ApiProperty({ example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
  @ApiProperty({ example: '2026-03-02T14:05:00.000Z' }) updated_at!: string;
}

@ListEnvelope()
export class AmbiguousSendPageDto {
  @ApiProperty({ type: [AmbiguousSendDto] }) items!: AmbiguousSendDto[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last' }) next_cursor!: string | null;
}

export class AmbiguousSendResolvedDto {
  @ApiProperty({ enum: ['resolved', 'resolved_failed'] }) outcome!: string;
  @ApiProperty({ example: '00000001-1a2b-4c3d-8e4f-000000000001' }) entry_id!: string;
  @ApiProperty({ enum: ['accepted', 'failed'] }) status!: string;
}
