import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, MaxLength, MinLength, ValidateNested } from 'class-validator';
import {
  ACTION_STATUSES,
  CAMPAIGN_STATUSES,
  type CampaignStatus,
  OUTREACH_ENROLLMENT_END_REASONS,
  OUTREACH_ENROLLMENT_STATUSES,
  type OutreachEnrollmentListQuery,
  OUTREACH_CHANNELS,
  type OutreachChannel,
  OUTREACH_MAX_BATCH,
  OUTREACH_REJECT_REASON_MAX,
} from '@touchpoint/contracts';
import { ListEnvelope } from '../../http/openapi-envelopes.js';

/**
 * Largest people list the gateway parses at all (ours: bounds the body); the outreach service
 * answers 422 `batch_too_large` above OUTREACH_MAX_BATCH (seed 003 §4.1).
 */
const PEOPLE_PARSE_LIMIT = 10_000;

export class CampaignParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') campaign_id!: string;
}

export class EnrollmentParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') enrollment_id!: string;
}

export class ActionParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') action_id!: string;
}

export class CreateCampaignBody {
  @ApiProperty({ maxLength: 200 }) @IsString() @MinLength(1) @MaxLength(200) name!: string;
  @ApiProperty({ maxLength: 2000, description: 'What the campaign must achieve; a stop decision says whether it was met' }) @IsString() @MinLength(1) @MaxLength(2000) goal!: string;
  @ApiProperty({ enum: OUTREACH_CHANNELS, isArray: true }) @IsArray() @ArrayMinSize(1) @IsIn(OUTREACH_CHANNELS, { each: true }) allowed_channels!: OutreachChannel[];
  @ApiProperty({ minimum: 1, maximum: 20 }) @IsInt() max_touches!: number;
  @ApiProperty({ minimum: 1, maximum: 90 }) @IsInt() followup_min_days!: number;
  @ApiProperty({ minimum: 1, maximum: 90 }) @IsInt() followup_max_days!: number;
  @ApiPropertyOptional({ format: 'uuid', description: 'Sender id of the mailbox (default mailbox when absent)' }) @IsOptional() @IsUUID('all') email_sender_id?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Sender id of the LinkedIn account (LinkedIn actions need one)' }) @IsOptional() @IsUUID('all') linkedin_sender_id?: string;
}

export class ListCampaignsQuery {
  @ApiPropertyOptional({ enum: CAMPAIGN_STATUSES }) @IsOptional() @IsIn(CAMPAIGN_STATUSES) status?: CampaignStatus;
}

export class CampaignDto {
  @ApiProperty({ format: 'uuid', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) id!: string;
  @ApiProperty({ example: '00000002-1a2b-4c3d-8e4f-000000000002' }) organization_id!: string;
  @ApiProperty({ example: 'Operations leads, Q2' }) name!: string;
  @ApiProperty({ example: 'Book a demo with operations leads' }) goal!: string;
  @ApiProperty({ enum: CAMPAIGN_STATUSES }) status!: string;
  @ApiProperty({ enum: OUTREACH_CHANNELS, isArray: true }) allowed_channels!: string[];
  @ApiProperty({ example: 1 }) max_touches!: number;
  @ApiProperty({ example: 1 }) followup_min_days!: number;
  @ApiProperty({ example: 1 }) followup_max_days!: number;
  @ApiProperty({ nullable: true, type: String, example: '00000003-1a2b-4c3d-8e4f-000000000003' }) email_sender_id!: string | null;
  @ApiProperty({ nullable: true, type: String, example: '00000004-1a2b-4c3d-8e4f-000000000004' }) linkedin_sender_id!: string | null;
  @ApiProperty({ description: 'Live enrollments (at most 200)', example: 1 }) live_enrollments!: number;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) updated_at!: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: '2026-03-02T14:05:00.000Z' }) paused_at!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: '2026-03-02T14:05:00.000Z' }) archived_at!: string | null;
}

/** Answer of `DELETE /agentic/outreach/campaigns/{campaign_id}`. */
export class CampaignDeletedDto {
  @ApiProperty({ enum: [true], example: true }) deleted!: true;
  @ApiProperty({ format: 'uuid', example: '2d4f6a8c-1b3e-4d5f-8a7c-9e0b1d2f3a4c' }) campaign_id!: string;
}

@ListEnvelope()
export class CampaignListDto {
  @ApiProperty({ type: CampaignDto, isArray: true }) items!: CampaignDto[];
}

export class PersonBody {
  @ApiProperty({ enum: ['crm', 'prospect'] }) @IsIn(['crm', 'prospect']) person_kind!: 'crm' | 'prospect';
  @ApiProperty({ description: 'The contact id' }) @IsString() @MinLength(1) @MaxLength(200) person_id!: string;
}

export class EnrollBatchBody {
  @ApiProperty({ type: PersonBody, isArray: true, description: `At most ${OUTREACH_MAX_BATCH} people; more answers 422 batch_too_large` })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(PEOPLE_PARSE_LIMIT)
  @ValidateNested({ each: true })
  @Type(() => PersonBody)
  people!: PersonBody[];
}

export class OutreachEnrollmentDto {
  @ApiProperty({ format: 'uuid', example: '00000005-1a2b-4c3d-8e4f-000000000005' }) id!: string;
  @ApiProperty({ example: '00000002-1a2b-4c3d-8e4f-000000000002' }) organization_id!: string;
  @ApiProperty({ format: 'uuid', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) campaign_id!: string;
  @ApiProperty({ enum: ['crm', 'prospect'] }) person_kind!: string;
  @ApiProperty({ example: '00000006-1a2b-4c3d-8e4f-000000000006' }) person_id!: string;
  @ApiProperty({ enum: OUTREACH_ENROLLMENT_STATUSES }) status!: string;
  @ApiProperty({ enum: OUTREACH_ENROLLMENT_END_REASONS, nullable: true }) ended_reason!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: '2026-03-02T14:05:00.000Z' }) ended_at!: string | null;
  @ApiProperty({ example: 1 }) touch_count!: number;
  @ApiProperty({ example: 1 }) context_version!: number;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: '2026-03-02T14:05:00.000Z' }) next_check_at!: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) updated_at!: string;
  @ApiProperty({ example: true }) awaiting_approval!: boolean;
}

export class EnrollResultDto {
  @ApiProperty({ enum: ['crm', 'prospect'] }) person_kind!: string;
  @ApiProperty({ example: '00000006-1a2b-4c3d-8e4f-000000000006' }) person_id!: string;
  @ApiProperty({ enum: ['added', 'already_enrolled', 'campaign_full', 'opted_out', 'not_found'] }) result!: string;
  @ApiPropertyOptional({ format: 'uuid', example: '00000005-1a2b-4c3d-8e4f-000000000005' }) enrollment_id?: string;
  @ApiPropertyOptional({ description: 'added: the person was already live in this campaign', example: true }) existing?: boolean;
  @ApiPropertyOptional({ description: 'already_enrolled: the other campaign', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) campaign_id?: string;
  @ApiPropertyOptional() campaign_name?: string;
  @ApiPropertyOptional({ enum: CAMPAIGN_STATUSES }) campaign_status?: string;
}

export class EnrollBatchResultDto {
  @ApiProperty({ format: 'uuid', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) campaign_id!: string;
  @ApiProperty({ type: EnrollResultDto, isArray: true, description: 'One per person, in the order given' }) results!: EnrollResultDto[];
}

export class ListOutreachEnrollmentsQuery {
  @ApiPropertyOptional({ enum: OUTREACH_ENROLLMENT_STATUSES }) @IsOptional() @IsIn(OUTREACH_ENROLLMENT_STATUSES) status?: OutreachEnrollmentListQuery['status'];
  @ApiPropertyOptional({ minimum: 1, maximum: 500, default: 200 }) @IsOptional() @Type(() => Number) @IsInt() limit?: number;
  @ApiPropertyOptional({ description: '`next_cursor` of the previous page (same status filter); a bad or stale one answers 422 invalid_cursor' })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  cursor?: string;
}

@ListEnvelope()
export class OutreachEnrollmentListDto {
  @ApiProperty({ type: OutreachEnrollmentDto, isArray: true }) items!: OutreachEnrollmentDto[];
  @ApiProperty({ type: String, nullable: true, description: 'Cursor of the next page; null on the last one' }) next_cursor!: string | null;
}

export class OutreachSettingsDto {
  @ApiProperty({ example: '00000002-1a2b-4c3d-8e4f-000000000002' }) organization_id!: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'Set while outreach is stopped for the organization', example: '2026-03-02T14:05:00.000Z' }) outreach_stopped_at!: string | null;
}

export class DraftPayloadBody {
  @ApiPropertyOptional({ description: 'email (not a reply)' }) @IsOptional() @IsString() @MaxLength(10_000) subject?: string;
  @ApiPropertyOptional({ description: 'email and linkedin_message' }) @IsOptional() @IsString() @MaxLength(50_000) body?: string;
  @ApiPropertyOptional({ description: 'linkedin_connection' }) @IsOptional() @IsString() @MaxLength(10_000) note?: string;
}

export class ApproveBody {
  @ApiPropertyOptional({ type: DraftPayloadBody, description: "The reviewer's edit, merged over the draft: a field left out keeps the draft's text; absent sends the draft as written" })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => DraftPayloadBody)
  payload?: DraftPayloadBody;
}

export class RejectBody {
  @ApiProperty({ enum: ['regenerate', 'stop'] }) @IsIn(['regenerate', 'stop']) then!: 'regenerate' | 'stop';
  @ApiPropertyOptional({ maxLength: OUTREACH_REJECT_REASON_MAX, description: 'Required for regenerate (1 to 1000 characters)' })
  @IsOptional()
  @IsString()
  @MaxLength(OUTREACH_REJECT_REASON_MAX * 4)
  reason?: string;
}

export class ReviewQueueQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 200 }) @IsOptional() @Type(() => Number) @IsInt() limit?: number;
}

export class ActionDto {
  @ApiProperty({ format: 'uuid', example: '00000007-1a2b-4c3d-8e4f-000000000007' }) id!: string;
  @ApiProperty({ example: '00000002-1a2b-4c3d-8e4f-000000000002' }) organization_id!: string;
  @ApiProperty({ format: 'uuid', example: '00000005-1a2b-4c3d-8e4f-000000000005' }) enrollment_id!: string;
  @ApiProperty({ format: 'uuid', example: '00000008-1a2b-4c3d-8e4f-000000000008' }) decision_id!: string;
  @ApiProperty({ enum: ['email', 'linkedin_connection', 'linkedin_message'] }) type!: string;
  @ApiProperty({ enum: ACTION_STATUSES }) status!: string;
  @ApiProperty({ type: Object }) draft_payload!: Record<string, unknown>;
  @ApiProperty({ type: Object, nullable: true }) approved_payload!: Record<string, unknown> | null;
  @ApiProperty({ nullable: true, type: String, description: 'SHA-256 hex of the canonical JSON of approved_payload' }) approved_hash!: string | null;
  @ApiProperty({ nullable: true, type: String }) approved_by!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: '2026-03-02T14:05:00.000Z' }) approved_at!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'When an approved action is due to be sent; null before approval and once its send started', example: '2026-03-02T14:05:00.000Z' }) next_attempt_at!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'The member who rejected it', example: null }) rejected_by!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: null }) rejected_at!: string | null;
  @ApiProperty({ nullable: true, type: String }) reject_reason!: string | null;
  @ApiProperty({ nullable: true, type: String }) reject_then!: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'When the send left (status executed)', example: null }) executed_at!: string | null;
  @ApiProperty({ format: 'uuid', nullable: true, type: String, description: 'The messaging message of the send', example: null }) message_id!: string | null;
  @ApiProperty({ nullable: true, type: String, description: "The provider's id of the sent message", example: null }) provider_message_id!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'Why the send failed (status failed)', example: null }) failure_reason!: string | null;
  @ApiProperty({ description: 'On a failed send: true when it may still have reached the contact (an ambiguous send, never sent again)', example: false }) outcome_unknown!: boolean;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
}

/** The person on a review card, read fresh from messaging (null fields when it cannot be read). */
export class ReviewPersonDto {
  @ApiProperty({ enum: ['crm', 'prospect'] }) person_kind!: string;
  @ApiProperty({ example: '00000006-1a2b-4c3d-8e4f-000000000006' }) person_id!: string;
  @ApiProperty({ nullable: true, type: String, example: 'Ana Souza' }) name!: string | null;
  @ApiProperty({ nullable: true, type: String, description: "The contact's custom field `company`", example: 'Acme Logistics' }) company!: string | null;
}

/** The campaign on a review card, with its status (Approve is refused while it is not active). */
export class ReviewCampaignDto {
  @ApiProperty({ format: 'uuid', example: '00000001-1a2b-4c3d-8e4f-000000000001' }) campaign_id!: string;
  @ApiProperty({ example: 'Operations leads, Q2' }) name!: string;
  @ApiProperty({ enum: CAMPAIGN_STATUSES }) status!: string;
}

/** A draft's text: subject and body (email; no subject on a reply), note (LinkedIn connection) or body (LinkedIn message). */
export class DraftDto {
  @ApiPropertyOptional({ example: 'A faster way to plan routes' }) subject?: string;
  @ApiPropertyOptional({ example: 'Hi Ana, would a 20-minute call next week work?' }) body?: string;
  @ApiPropertyOptional({ example: 'Hi Ana, glad to connect.' }) note?: string;
}

export class ReviewCardDto {
  @ApiProperty({ format: 'uuid', example: '00000007-1a2b-4c3d-8e4f-000000000007' }) id!: string;
  @ApiProperty({ format: 'uuid', example: '00000005-1a2b-4c3d-8e4f-000000000005' }) enrollment_id!: string;
  @ApiProperty({ enum: ['email', 'linkedin_connection', 'linkedin_message'] }) type!: string;
  @ApiProperty({ format: 'date-time', example: '2026-03-02T14:05:00.000Z' }) created_at!: string;
  @ApiProperty({ example: 1 }) age_seconds!: number;
  @ApiProperty({ enum: ACTION_STATUSES }) status!: string;
  @ApiProperty({ type: ReviewPersonDto }) person!: ReviewPersonDto;
  @ApiProperty({ type: ReviewCampaignDto }) campaign!: ReviewCampaignDto;
  @ApiProperty({ nullable: true, type: String, description: 'Email address or LinkedIn profile URL, read fresh', example: 'ana@example.com' }) to!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'The inbound message answered, cut at 500 characters' }) replying_to!: string | null;
  @ApiProperty({ nullable: true, type: String }) rationale!: string | null;
  @ApiProperty({ nullable: true, type: String }) objective!: string | null;
  @ApiProperty({ type: DraftDto }) draft!: DraftDto;
}

@ListEnvelope()
export class ReviewQueueDto {
  @ApiProperty({ type: ReviewCardDto, isArray: true, description: 'Pending actions, oldest first' }) items!: ReviewCardDto[];
  @ApiProperty({ description: 'Every pending action of the organization', example: 1 }) total!: number;
}

export class TimelineItemDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['enrolled', 'decision', 'action', 'email', 'linkedin_message', 'next_check_moved', 'ended'] }) kind!: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) at!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The fields of the kind (an action: type, status, draft, approved_payload, ...; an email: direction, subject, body, status, thread_id)' }) data!: Record<string, unknown>;
}

@ListEnvelope()
export class TimelineDto {
  @ApiProperty({ format: 'uuid', example: '00000005-1a2b-4c3d-8e4f-000000000005' }) enrollment_id!: string;
  @ApiProperty({ type: TimelineItemDto, isArray: true, description: 'Newest first, tie on id' }) items!: TimelineItemDto[];
  @ApiProperty({ type: String, isArray: true, description: 'Sections that could not be read' }) missing!: string[];
}
