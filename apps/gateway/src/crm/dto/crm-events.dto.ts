import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsEmail, IsIn, IsISO8601, IsNotEmpty, IsObject, IsOptional, IsString, IsUUID, MaxLength, ValidateNested } from 'class-validator';
import { CRM_EVENT_TYPES, CRM_LEAD_CLOSED } from '@touchpoint/contracts';

/** Longest CRM id accepted (event, lead, deal, status, stage), characters. */
const CRM_ID_MAX = 200;

/** Who the event is about: our contact id, or an email / phone messaging resolves among the organization's contacts. */
export class CrmContactRefDto {
  @ApiPropertyOptional({ format: 'uuid', example: '88888888-8888-4888-8888-888888888888' }) @IsOptional() @IsUUID('all') contact_id?: string;
  @ApiPropertyOptional({ example: 'ana@example.com' }) @IsOptional() @IsEmail() @MaxLength(320) email?: string;
  @ApiPropertyOptional({ example: '+5592988887777', description: 'E.164 or international digits' }) @IsOptional() @IsString() @MaxLength(40) phone?: string;
}

/**
 * Body of `POST /crm/events` (seed 000 "Trigger hooks"): a lead created, a lead's status changed
 * (with `closed` when that status ends the lead), or a deal's stage changed.
 */
export class CrmEventDto {
  @ApiProperty({ maxLength: CRM_ID_MAX, example: 'evt_01J9Z6Q2V8', description: "The CRM's id of this event: sending it again is answered as a replay and published once" })
  @IsString()
  @IsNotEmpty()
  @MaxLength(CRM_ID_MAX)
  event_id!: string;

  @ApiProperty({ enum: CRM_EVENT_TYPES, example: 'lead.status_changed' }) @IsIn(CRM_EVENT_TYPES) type!: (typeof CRM_EVENT_TYPES)[number];

  @ApiProperty({ type: CrmContactRefDto, description: 'At least one of contact_id, email, phone' })
  @IsObject()
  @ValidateNested()
  @Type(() => CrmContactRefDto)
  contact!: CrmContactRefDto;

  @ApiPropertyOptional({ maxLength: CRM_ID_MAX, example: 'lead-4711', description: 'Required for lead.*' }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(CRM_ID_MAX) lead_id?: string;
  @ApiPropertyOptional({ maxLength: CRM_ID_MAX, example: 'won', description: 'Required for lead.status_changed' }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(CRM_ID_MAX) status?: string;
  @ApiPropertyOptional({ type: String, maxLength: CRM_ID_MAX, example: 'negotiation', nullable: true }) @IsOptional() @IsString() @MaxLength(CRM_ID_MAX) previous_status?: string | null;
  @ApiPropertyOptional({ enum: CRM_LEAD_CLOSED, example: 'won', nullable: true, description: "lead.status_changed only: the lead ended; the contact's live follow-ups stop with reason lead_won / lead_lost" })
  @IsOptional()
  @IsIn(CRM_LEAD_CLOSED)
  closed?: (typeof CRM_LEAD_CLOSED)[number] | null;
  @ApiPropertyOptional({ maxLength: CRM_ID_MAX, example: 'deal-42', description: 'Required for deal.stage_changed' }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(CRM_ID_MAX) deal_id?: string;
  @ApiPropertyOptional({ maxLength: CRM_ID_MAX, example: 'proposal', description: 'Required for deal.stage_changed' }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(CRM_ID_MAX) stage_id?: string;
  @ApiPropertyOptional({ type: String, maxLength: CRM_ID_MAX, example: 'qualified', nullable: true }) @IsOptional() @IsString() @MaxLength(CRM_ID_MAX) previous_stage_id?: string | null;
  @ApiPropertyOptional({ example: '2026-10-02T13:00:00Z', description: 'When it happened in the CRM (ISO-8601); default: when received' }) @IsOptional() @IsISO8601({ strict: true }) occurred_at?: string;
}

/** Body of `POST /webhooks/crm`: the same event, with the organization it belongs to (no API key names it). */
export class CrmWebhookEventDto extends CrmEventDto {
  @ApiProperty({ format: 'uuid', example: '11111111-1111-4111-8111-111111111111' }) @IsUUID('all') organization_id!: string;
}

/** What the ingress answers, first time and on a replay. */
export class CrmEventAcceptedDto {
  @ApiProperty({ example: 'crm:11111111-1111-4111-8111-111111111111:evt_01J9Z6Q2V8', description: 'Id of the event published on the bus' }) event_id!: string;
  @ApiProperty({ enum: CRM_EVENT_TYPES, example: 'lead.status_changed' }) type!: string;
  @ApiProperty({ format: 'uuid', example: '88888888-8888-4888-8888-888888888888', description: 'The contact the event was resolved to' }) contact_id!: string;
  @ApiProperty({ example: false, description: 'true when this CRM event id was accepted before (nothing is published again)' }) duplicate!: boolean;
  @ApiProperty({ example: '2026-10-02T13:00:01.000Z', description: 'When it was first accepted (UTC)' }) received_at!: string;
}
