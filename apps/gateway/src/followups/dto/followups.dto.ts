import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsISO8601, IsNotEmpty, IsNumber, IsObject, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import {
  type BulkJobCreateData,
  CONSENT_MODES,
  EFFECT_LIST_DEFAULT_LIMIT,
  EFFECT_LIST_MAX_LIMIT,
  EFFECT_LIST_STATUSES,
  EFFECT_RESOLUTION_OUTCOMES,
  type EffectListStatus,
  type EffectResolveData,
  type EnrollmentControlData,
  type EnrollmentListData,
  type FlowEdgeCondition,
  type FlowEdgeConditionType,
  type FlowSettings,
  type FlowTriggerKind,
  type HandoffPolicy,
  type PromiseCreateData,
  type PromiseListData,
  type PromiseResolveData,
  type QueueListData,
  type SenderMode,
  type SettingsUpdateData,
  PROMISE_OUTSIDE_WINDOW,
  PROMISE_STATUSES,
  RESOLUTION_NOTE_MAX,
  RESOLUTION_NOTE_MIN,
  ENROLLMENT_CONTROL_ACTIONS,
  FLOW_EDGE_CONDITION_TYPES,
  FLOW_NODE_TYPES,
  FLOW_TIMEZONE_MODES,
  FLOW_TRIGGER_KINDS,
  FOLLOWUP_ENROLLMENT_STATUSES,
  HANDOFF_POLICIES,
  SENDER_MODES,
} from '@touchpoint/contracts';

/**
 * Request shapes of the seed-002 follow-up routes. The gateway checks shape and tenancy; the
 * followups service owns every rule (publish validation, statuses, limits).
 */

const NODE_ID = /^[A-Za-z0-9_-]{1,64}$/;

const NODE_CONFIG_DOC = [
  'Depends on `type` (the engine reads it; publish validates it, answering `invalid_config`):',
  '- `trigger`: `{}`',
  '- `wait`: `{"mode": "fixed", "duration_ms"}` or `{"mode": "reply", "timeout_ms"}` (exits `branch` `replied` / `timeout`); 300000 (5 min) to 7776000000 (90 days)',
  '- `condition`: `{"match": "all"|"any", "rules": [{"field", "op", "value"}]}` with fields `contact.tags`, `contact.name|phone|email`, `contact.fields.<key>`, `vars.<key>`, `last_send.status` and ops eq, neq, contains, not_contains, exists, not_exists, in, gt, gte, lt, lte; exits `cond_result` true / false',
  '- `ai_classify`: `{"classes": [{"id", "label", "description"}], "fallback_class_id", "min_confidence", "instructions"}`; exits `class_match` per class',
  '- `match_reply`: `{"branches": [{"id", "keywords": [...]}]}` (accent- and case-insensitive whole words); exits `branch` per id plus `default`',
  '- `repeat`: `{"max_count": 1..20}`; exits `branch` `again` / `done`',
  '- `action`: `{"mode": "text", "body", "template_fallback"?}`, `{"mode": "template", "template": {"name", "language", "parameters"}}`, `{"mode": "media", "media": {"media_type", "link", "caption"?, "filename"?}, "template_fallback"?}`, `{"mode": "ai", "instructions", "template_fallback"?}`, `{"mode": "tag"|"untag", "tags"}`, `{"mode": "handoff", "note"?}`; exit `always`. A send may add `"anchor_grace_ms"` (0 to 7776000000): it is then tied to the enrollment\'s `anchor_at` and skipped (`anchor_past_grace`) once the anchor is more than that many ms past, or when there is no anchor (`anchor_missing`)',
  '- `end`: `{"outcome"?}` (snake_case, default `completed`)',
  'Texts may use `{{vars.<key>}}`, `{{anchor.at|date|time}}`, `{{contact.name|first_name}}`; a missing value skips the send.',
].join('\n');

export class PositionDto {
  @ApiProperty() @IsNumber() x!: number;
  @ApiProperty() @IsNumber() y!: number;
}

export class FlowNodeDto {
  @ApiProperty({ example: 'espera', pattern: NODE_ID.source }) @Matches(NODE_ID) id!: string;
  @ApiProperty({ enum: FLOW_NODE_TYPES }) @IsString() @IsNotEmpty() @MaxLength(40) type!: string;
  @ApiPropertyOptional({ maxLength: 200 }) @IsOptional() @IsString() @MaxLength(200) label?: string;
  @ApiPropertyOptional({ type: PositionDto }) @IsOptional() @ValidateNested() @Type(() => PositionDto) position?: PositionDto;
  @ApiProperty({ type: 'object', additionalProperties: true, description: NODE_CONFIG_DOC }) @IsObject() config!: Record<string, unknown>;
}

export class EdgeConditionDto {
  @ApiProperty({ enum: FLOW_EDGE_CONDITION_TYPES }) @IsIn(FLOW_EDGE_CONDITION_TYPES) type!: FlowEdgeConditionType;
  @ApiPropertyOptional({ description: 'for `branch`' }) @IsOptional() @IsString() @MaxLength(64) branch_id?: string;
  @ApiPropertyOptional({ description: 'for `class_match`' }) @IsOptional() @IsString() @MaxLength(64) class_id?: string;
  @ApiPropertyOptional({ description: 'for `cond_result`' }) @IsOptional() @IsBoolean() value?: boolean;
}

export class FlowEdgeDto {
  @ApiProperty({ example: 'e1' }) @Matches(NODE_ID) id!: string;
  @ApiProperty({ example: 'inicio' }) @Matches(NODE_ID) source!: string;
  @ApiProperty({ example: 'espera' }) @Matches(NODE_ID) target!: string;
  @ApiProperty({ type: EdgeConditionDto }) @ValidateNested() @Type(() => EdgeConditionDto) condition!: EdgeConditionDto & FlowEdgeCondition;
}

export class FlowGraphDto {
  @ApiProperty({ type: [FlowNodeDto], description: '2 to 60 nodes to publish (a draft may hold up to 200)' })
  @IsArray()
  @ArrayMaxSize(200)
  @ValidateNested({ each: true })
  @Type(() => FlowNodeDto)
  nodes!: FlowNodeDto[];

  @ApiProperty({ type: [FlowEdgeDto], description: 'up to 120 edges to publish (a draft may hold up to 400)' })
  @IsArray()
  @ArrayMaxSize(400)
  @ValidateNested({ each: true })
  @Type(() => FlowEdgeDto)
  edges!: FlowEdgeDto[];
}

export class FlowTriggerDto {
  @ApiProperty({ enum: FLOW_TRIGGER_KINDS, example: 'manual' }) @IsIn(FLOW_TRIGGER_KINDS) kind!: FlowTriggerKind;
  @ApiProperty({ description: 'a reply stops the enrollment (unless it is waiting for that reply)' }) @IsBoolean() cancel_on_reply!: boolean;
  @ApiPropertyOptional({ description: 'the deal stage that starts the flow (models with requires_stage)' }) @IsOptional() @IsString() @MaxLength(200) stage_id?: string;
  @ApiPropertyOptional({ description: '`tag_added`: only this tag' }) @IsOptional() @IsString() @MaxLength(100) tag?: string;
  @ApiPropertyOptional({ type: [String], description: '`inbound_keyword`: whole words, accent- and case-insensitive' }) @IsOptional() @IsArray() @ArrayMaxSize(50) @IsString({ each: true }) @MaxLength(100, { each: true }) keywords?: string[];
  @ApiPropertyOptional({ description: '`lead_status_changed`: only this status' }) @IsOptional() @IsString() @MaxLength(100) status?: string;
  @ApiPropertyOptional({ description: 'conditions on the contact: `{match: all|any, rules: [{field, op, value?}]}` (contact.tags, contact.name|phone|email, contact.fields.<key>)' })
  @IsOptional()
  @IsObject()
  segment?: BulkJobCreateData['segment'];
  /** Other fields of a trigger kind pass through to followups, which checks them (`FlowSettings.trigger`). */
  [key: string]: unknown;
}

export class FlowSenderDto {
  @ApiProperty({ enum: SENDER_MODES, description: "`fixed` names the flow's number; every send takes the first connected number of: the enrollment's, the flow's fixed one, the contact's last conversation's, the organization's default, any connected" })
  @IsIn(SENDER_MODES)
  mode!: SenderMode;
  @ApiPropertyOptional({ format: 'uuid', description: "the flow's fixed number (mode `fixed`)" }) @IsOptional() @IsUUID('all') sender_id?: string;
}

export class FlowSettingsDto {
  @ApiProperty({ type: FlowTriggerDto }) @ValidateNested() @Type(() => FlowTriggerDto) trigger!: FlowTriggerDto;
  @ApiProperty({ enum: HANDOFF_POLICIES, description: 'what a human message does: pause, stop, or nothing' }) @IsIn(HANDOFF_POLICIES) handoff_policy!: HandoffPolicy;
  @ApiPropertyOptional({ minimum: 0, maximum: 23 }) @IsOptional() @IsInt() @Min(0) @Max(23) send_start_hour?: number;
  @ApiPropertyOptional({ minimum: 1, maximum: 24, description: 'exclusive' }) @IsOptional() @IsInt() @Min(1) @Max(24) send_end_hour?: number;
  @ApiPropertyOptional({ type: [Number], description: 'ISO weekdays, 1 = Monday … 7 = Sunday' })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(7)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(7, { each: true })
  send_days?: number[];
  @ApiPropertyOptional({ example: 'America/Sao_Paulo' }) @IsOptional() @IsString() @MaxLength(64) timezone?: string;
  @ApiPropertyOptional({ enum: ['utility', 'marketing'] }) @IsOptional() @IsIn(['utility', 'marketing']) purpose?: FlowSettings['purpose'];
  @ApiPropertyOptional({ enum: ['live', 'test'] }) @IsOptional() @IsIn(['live', 'test']) environment?: FlowSettings['environment'];
  @ApiPropertyOptional({ type: FlowSenderDto }) @IsOptional() @ValidateNested() @Type(() => FlowSenderDto) sender?: FlowSenderDto;
  @ApiPropertyOptional({ description: 'every send waits for a decision (`awaiting_decision`) before it goes out' }) @IsOptional() @IsBoolean() require_approval?: boolean;
  @ApiPropertyOptional({
    enum: FLOW_TIMEZONE_MODES,
    default: 'flow',
    example: 'contact',
    description: "whose clock the send window's hours are read on: `flow` (this flow's `timezone`, else the organization's) or `contact` (the contact's own `time_zone` when it has one, else the flow's)",
  })
  @IsOptional()
  @IsIn(FLOW_TIMEZONE_MODES)
  timezone_mode?: FlowSettings['timezone_mode'];
}

export class CustomerQuery {
  @ApiProperty({ format: 'uuid', description: "your organization's id" }) @IsUUID('all') customer_id!: string;
}

export class FlowIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') id!: string;
}

/** Body of `POST /ai/followup-flows` (seed 002's example is accepted as written). */
export class CreateFlowDto extends CustomerQuery {
  @ApiProperty({ example: 'Retomada em 4 horas', maxLength: 200 }) @IsString() @IsNotEmpty() @MaxLength(200) name!: string;
  @ApiProperty({ type: FlowGraphDto }) @ValidateNested() @Type(() => FlowGraphDto) graph!: FlowGraphDto;
  @ApiProperty({ type: FlowSettingsDto }) @ValidateNested() @Type(() => FlowSettingsDto) settings!: FlowSettingsDto;
}

/** Body of `PUT /ai/followup-flows/{id}`: saves the draft. */
export class UpdateFlowDto extends CreateFlowDto {
  @ApiProperty({ minimum: 1 }) @IsInt() @Min(1) expected_revision!: number;
}

/** Body of `PATCH /ai/followup-flows/{id}`. */
export class SetFlowStatusDto extends CustomerQuery {
  @ApiProperty({ minimum: 1 }) @IsInt() @Min(1) expected_revision!: number;
  @ApiProperty({ enum: ['active', 'paused', 'archived'] }) @IsIn(['active', 'paused', 'archived']) status!: 'active' | 'paused' | 'archived';
}

/** Body of `POST /ai/followup-flows/{id}/publish`. */
export class PublishFlowDto extends CustomerQuery {
  @ApiProperty({ minimum: 1 }) @IsInt() @Min(1) expected_revision!: number;
}

/** Body of `POST /ai/followup-flows/{id}/rollback`. */
export class RollbackFlowDto extends PublishFlowDto {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') version_id!: string;
}

/** Body of `POST /ai/followup-flows/from-model`. */
export class CreateFromModelDto extends CustomerQuery {
  @ApiProperty({ example: 'resume_after_no_reply' }) @IsString() @IsNotEmpty() @MaxLength(64) model_id!: string;
  @ApiPropertyOptional({ maxLength: 200 }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) name?: string;
  @ApiPropertyOptional({ description: 'required by models with requires_stage (else 422 stage_required)' }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) stage_id?: string;
}

/** `customer_id` is optional here: the catalog is the same for every organization. */
export class OptionalCustomerQuery {
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') customer_id?: string;
}

export class ListEnrollmentsQuery extends CustomerQuery {
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') flow_id?: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') contact_id?: string;
  @ApiPropertyOptional({ enum: FOLLOWUP_ENROLLMENT_STATUSES }) @IsOptional() @IsIn(FOLLOWUP_ENROLLMENT_STATUSES) status?: EnrollmentListData['status'];
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 100 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit?: number;
  @ApiPropertyOptional({ description: 'next_cursor of the previous page' }) @IsOptional() @IsString() @MaxLength(1024) cursor?: string;
}

/** Body of `POST /ai/followups/enrollments`. */
export class CreateEnrollmentDto extends CustomerQuery {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') flow_id!: string;
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') contact_id!: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') conversation_id?: string;
  @ApiProperty({ description: 'your key for this enrollment: repeating it returns the same enrollment', maxLength: 200 }) @IsString() @IsNotEmpty() @MaxLength(200) operation_key!: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') agent_id?: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') appointment_id?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'values for {{vars.<key>}}' }) @IsOptional() @IsObject() variables?: Record<string, string | number | boolean>;
  @ApiPropertyOptional({ format: 'date-time', description: 'the moment {{anchor.*}} names (an appointment start)' }) @IsOptional() @IsISO8601() anchor_at?: string;
  @ApiPropertyOptional({ format: 'uuid', description: "the enrollment's own number: the first one tried for its sends (when connected)" }) @IsOptional() @IsUUID('all') sender_id?: string;
}

export class EnrollmentIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') id!: string;
}

/** Body of `POST /ai/followups/enrollments/{id}/control`. */
export class ControlEnrollmentDto extends CustomerQuery {
  @ApiProperty({ minimum: 1, description: "the enrollment's revision" }) @IsInt() @Min(1) expected_revision!: number;
  @ApiProperty({ enum: ENROLLMENT_CONTROL_ACTIONS, description: '`advance_now` runs the current wait now' }) @IsIn(ENROLLMENT_CONTROL_ACTIONS) action!: EnrollmentControlData['action'];
  @ApiPropertyOptional({ maxLength: 500 }) @IsOptional() @IsString() @MaxLength(500) reason?: string;
}

export class QueueQuery extends CustomerQuery {
  @ApiPropertyOptional({ enum: ['enrollment', 'promise'] }) @IsOptional() @IsIn(['enrollment', 'promise']) kind?: QueueListData['kind'];
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') flow_id?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(40) status?: string;
  @ApiPropertyOptional({ maxLength: 100, description: 'matches contact name or phone, or flow name' }) @IsOptional() @IsString() @MaxLength(100) q?: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') contact_id?: string;
  @ApiPropertyOptional({ description: 'next_cursor of the previous page (422 invalid_cursor if bad or stale: start again without it)' }) @IsOptional() @IsString() @MaxLength(1024) cursor?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 30 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
}

export class SendWindowDto {
  @ApiProperty({ minimum: 0, maximum: 23 }) @IsInt() @Min(0) @Max(23) start_hour!: number;
  @ApiProperty({ minimum: 1, maximum: 24 }) @IsInt() @Min(1) @Max(24) end_hour!: number;
  @ApiProperty({ type: [Number], description: 'ISO weekdays' }) @IsArray() @ArrayMinSize(1) @ArrayMaxSize(7) @IsInt({ each: true }) @Min(1, { each: true }) @Max(7, { each: true }) days!: number[];
  @ApiProperty({ example: 'America/Sao_Paulo' }) @IsString() @MaxLength(64) timezone!: string;
}

export class ApprovedTemplateDto {
  @ApiProperty({ example: 'retomada_conversa' }) @IsString() @Matches(/^[a-z0-9_]{1,512}$/) name!: string;
  @ApiProperty({ example: 'pt_BR' }) @IsString() @Matches(/^[a-z]{2,3}(_[A-Z]{2})?$/) language!: string;
  @ApiProperty({ type: 'integer', minimum: 0, maximum: 20 }) @IsInt() @Min(0) @Max(20) parameter_count!: number;
}

/** Body of `PUT /ai/followups/settings`: any of the fields, with the current revision (0 before the first save). */
export class UpdateSettingsDto extends CustomerQuery {
  @ApiProperty({ minimum: 0 }) @IsInt() @Min(0) expected_revision!: number;
  @ApiPropertyOptional({ type: SendWindowDto }) @IsOptional() @ValidateNested() @Type(() => SendWindowDto) send_window?: SendWindowDto;
  @ApiPropertyOptional({ minimum: 1, maximum: 100, description: 'follow-up sends per contact in any 24 hours' }) @IsOptional() @IsInt() @Min(1) @Max(100) contact_daily_cap?: number;
  @ApiPropertyOptional({ type: 'integer', nullable: true, description: 'follow-up sends per calendar month (UTC); null = unlimited' }) @IsOptional() @IsInt() @Min(1) monthly_send_quota?: number | null;
  @ApiPropertyOptional({ enum: CONSENT_MODES }) @IsOptional() @IsIn(CONSENT_MODES) consent_mode?: SettingsUpdateData['consent_mode'];
  @ApiPropertyOptional({ example: 'opt_in' }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) consent_tag?: string;
  @ApiPropertyOptional({ type: 'integer', nullable: true, description: 'live enrollments the plan allows; null = unlimited' }) @IsOptional() @IsInt() @Min(1) max_live_enrollments?: number | null;
  @ApiPropertyOptional({ minimum: 1, maximum: 3650 }) @IsOptional() @IsInt() @Min(1) @Max(3650) retention_days?: number;
  @ApiPropertyOptional({ type: [ApprovedTemplateDto] }) @IsOptional() @IsArray() @ArrayMaxSize(500) @ValidateNested({ each: true }) @Type(() => ApprovedTemplateDto) approved_templates?: ApprovedTemplateDto[];
}

/** Body of `PUT /ai/followups/settings/entitlement`. */
export class SetEntitlementDto extends CustomerQuery {
  @ApiProperty({ example: false, description: "whether the organization's plan includes follow-ups; false stops every live enrollment at its next release (`plan_lost`) and refuses new ones" })
  @IsBoolean()
  followups_enabled!: boolean;
}

export class EffectIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') id!: string;
}

/** Query of `GET /ai/followups/effects`: effects of one status, oldest first. */
export class ListEffectsQuery extends CustomerQuery {
  @ApiProperty({ enum: EFFECT_LIST_STATUSES, description: 'the sends waiting for a decision (flows with `require_approval`); the only status listed today' })
  @IsIn(EFFECT_LIST_STATUSES)
  status!: EffectListStatus;
  @ApiPropertyOptional({ format: 'uuid', description: 'only the effects of this flow' }) @IsOptional() @IsUUID('all') flow_id?: string;
  @ApiPropertyOptional({ description: 'next_cursor of the previous page (422 invalid_cursor if bad or stale: start again without it)' }) @IsOptional() @IsString() @MaxLength(1024) cursor?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: EFFECT_LIST_MAX_LIMIT, default: EFFECT_LIST_DEFAULT_LIMIT })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(EFFECT_LIST_MAX_LIMIT)
  limit?: number;
}

/** Body of `POST /ai/followups/effects/{id}/decision` (seed 002 "Efeitos"). */
export class EffectDecisionDto extends CustomerQuery {
  @ApiProperty({ description: 'true sends it, false rejects it' }) @IsBoolean() approve!: boolean;
}

/** Body of `POST /ai/followups/effects/{id}/resolve` (seed 002 "Efeitos"). */
export class EffectResolveDto extends CustomerQuery {
  @ApiProperty({ enum: EFFECT_RESOLUTION_OUTCOMES }) @IsIn(EFFECT_RESOLUTION_OUTCOMES) outcome!: EffectResolveData['outcome'];
  @ApiProperty({ minLength: RESOLUTION_NOTE_MIN, maxLength: RESOLUTION_NOTE_MAX, description: 'the evidence' })
  @IsString()
  @MinLength(RESOLUTION_NOTE_MIN)
  @MaxLength(RESOLUTION_NOTE_MAX)
  note!: string;
  @ApiPropertyOptional({ example: 'wamid.HBgNNTUxMTk5OTk5ODg4OBUCABIYIDNBMEY' }) @IsOptional() @IsString() @MaxLength(200) wamid?: string;
}

export class PromiseIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') id!: string;
}

export class PromiseTemplateDto {
  @ApiProperty({ example: 'retomada_conversa' }) @IsString() @Matches(/^[a-z0-9_]{1,512}$/) name!: string;
  @ApiProperty({ example: 'pt_BR' }) @IsString() @Matches(/^[a-z]{2,3}(_[A-Z]{2})?$/) language!: string;
  @ApiPropertyOptional({ type: [String] }) @IsOptional() @IsArray() @ArrayMaxSize(20) @IsString({ each: true }) @MaxLength(1024, { each: true }) parameters?: string[];
}

/** Body of `POST /ai/followups/promises` (seed 002 "Retornos avulsos"). */
export class CreatePromiseDto extends CustomerQuery {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') contact_id!: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') conversation_id?: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') agent_id?: string;
  @ApiProperty({ description: 'repeating it returns the same return' }) @IsString() @IsNotEmpty() @MaxLength(200) operation_key!: string;
  @ApiProperty({ maxLength: 500, example: 'Cliente pediu retorno após falar com o sócio' }) @IsString() @IsNotEmpty() @MaxLength(500) reason!: string;
  @ApiProperty({ maxLength: 1000, example: 'Retomar a proposta da cadeira ergonômica' }) @IsString() @IsNotEmpty() @MaxLength(1000) promise!: string;
  @ApiProperty({ example: '2026-10-02T10:00:00-03:00' }) @IsISO8601({ strict: true }) promised_at!: string;
  @ApiProperty({ enum: PROMISE_OUTSIDE_WINDOW, description: 'outside the 24-hour window: alert the team, or send an approved template' }) @IsIn(PROMISE_OUTSIDE_WINDOW) outside_window!: PromiseCreateData['outside_window'];
  @ApiPropertyOptional({ type: PromiseTemplateDto, description: "for `template` (default: the organization's first approved template)" }) @IsOptional() @ValidateNested() @Type(() => PromiseTemplateDto) template?: PromiseTemplateDto;
}

export class ListPromisesQuery extends CustomerQuery {
  @ApiPropertyOptional({ enum: PROMISE_STATUSES }) @IsOptional() @IsIn(PROMISE_STATUSES) status?: PromiseListData['status'];
  @ApiPropertyOptional({ maxLength: 100 }) @IsOptional() @IsString() @MaxLength(100) q?: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') contact_id?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(1024) cursor?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 30 }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
}

export class CancelPromiseDto extends CustomerQuery {
  @ApiPropertyOptional({ maxLength: 500 }) @IsOptional() @IsString() @MaxLength(500) reason?: string;
}

export class ResolvePromiseDto extends CustomerQuery {
  @ApiProperty({ enum: ['sent', 'rejected'] }) @IsIn(['sent', 'rejected']) outcome!: PromiseResolveData['outcome'];
  @ApiProperty({ minLength: RESOLUTION_NOTE_MIN, maxLength: RESOLUTION_NOTE_MAX }) @IsString() @MinLength(RESOLUTION_NOTE_MIN) @MaxLength(RESOLUTION_NOTE_MAX) note!: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) wamid?: string;
}

/** Body of `POST /ai/followups/bulk-enrollments`: a contact list or a segment (frozen when the job is created). */
export class CreateBulkJobDto extends CustomerQuery {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') flow_id!: string;
  @ApiProperty({ description: 'repeating it returns the same job' }) @IsString() @IsNotEmpty() @MaxLength(200) operation_key!: string;
  @ApiPropertyOptional({ type: [String], description: 'up to 50,000 contact ids' }) @IsOptional() @IsArray() @ArrayMaxSize(50_000) @IsUUID('all', { each: true }) contact_ids?: string[];
  @ApiPropertyOptional({ description: '`{match: all|any, rules: [{field, op, value?}]}` over contact.tags, contact.name|phone|email, contact.fields.<key>' })
  @IsOptional()
  @IsObject()
  segment?: BulkJobCreateData['segment'];
}

export class BulkJobIdParams {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all') id!: string;
}
