import { ApiProperty } from '@nestjs/swagger';
import { BULK_JOB_STATUSES, CONSENT_MODES, EFFECT_STATUSES, FLOW_STATUSES, FOLLOWUP_ENROLLMENT_STATUSES, PROMISE_OUTSIDE_WINDOW, PROMISE_STATUSES } from '@touchpoint/contracts';
import { cursorPage, dataEnvelope } from '../../http/openapi-envelopes.js';
import { ApprovedTemplateDto, FlowGraphDto, FlowSettingsDto, PromiseTemplateDto, SendWindowDto } from './followups.dto.js';

/**
 * Answers of the seed-002 follow-up routes as the document shows them (libs/contracts
 * `FlowView`, `FollowupEnrollmentView`, `EnrollmentDetailView`, `PromiseView`, …), each wrapped in
 * `{data: ...}` as seed 002 answers. Times are ISO-8601 UTC.
 */

const ORG = '6f1c2a4e-8b7d-4c3e-9a1f-2d5e8b7c4a10';
const FLOW = '2d4f6a8c-1b3e-4d5f-8a7c-9e0b1d2f3a4c';
const VERSION = '8a7b6c5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d';
const CONTACT = '0b6d7f3e-2c1a-4e8b-9f5d-7a3c2e1b4d60';
const ENROLLMENT = '4c3b2a19-0f8e-4d7c-b6a5-948372615d4e';
const AT = '2026-03-02T14:05:00.000Z';

/** A flow with its draft (`FlowView`). */
export class FlowDto {
  @ApiProperty({ format: 'uuid', example: FLOW }) id!: string;
  @ApiProperty({ format: 'uuid', example: ORG }) customer_id!: string;
  @ApiProperty({ example: 'Pós-venda' }) name!: string;
  @ApiProperty({ type: FlowGraphDto, description: 'the draft' }) graph!: FlowGraphDto;
  @ApiProperty({ type: FlowSettingsDto }) settings!: FlowSettingsDto;
  @ApiProperty({ enum: FLOW_STATUSES, example: 'active' }) status!: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: VERSION }) published_version_id!: string | null;
  @ApiProperty({ description: 'pass as expected_revision on the next change', example: 3 }) revision!: number;
  @ApiProperty({ type: String, nullable: true, example: null }) model_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) stage_id!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
}

/** A published, immutable version of a flow (`FlowVersionView`). */
export class FlowVersionDto {
  @ApiProperty({ format: 'uuid', example: VERSION }) id!: string;
  @ApiProperty({ format: 'uuid', example: FLOW }) flow_id!: string;
  @ApiProperty({ description: '1, 2, 3… in publication order', example: 2 }) version!: number;
  @ApiProperty({ type: FlowGraphDto }) graph!: FlowGraphDto;
  @ApiProperty({ type: FlowSettingsDto }) settings!: FlowSettingsDto;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'set when a rollback republished an older version', example: null }) source_version_id!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) published_at!: string;
}

/** A ready-made flow (`FlowModelView`). */
export class FlowModelDto {
  @ApiProperty({ example: 'pos_venda' }) id!: string;
  @ApiProperty({ example: 'Pós-venda' }) name!: string;
  @ApiProperty({ example: 'Checks in after a purchase and asks for a review' }) summary!: string;
  @ApiProperty({ example: 'after_sale' }) journey!: string;
  @ApiProperty({ example: 'A deal moves to the won stage' }) trigger_description!: string;
  @ApiProperty({ description: 'creating it needs stage_id', example: false }) requires_stage!: boolean;
  @ApiProperty({ example: 3 }) max_messages!: number;
}

/** An enrollment of a contact in a flow (`FollowupEnrollmentView`). */
export class FollowupEnrollmentDto {
  @ApiProperty({ format: 'uuid', example: ENROLLMENT }) id!: string;
  @ApiProperty({ format: 'uuid', example: ORG }) customer_id!: string;
  @ApiProperty({ format: 'uuid', example: FLOW }) flow_id!: string;
  @ApiProperty({ format: 'uuid', example: VERSION }) version_id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) conversation_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) agent_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) appointment_id!: string | null;
  @ApiProperty({ example: 'order-1042-followup' }) operation_key!: string;
  @ApiProperty({ enum: FOLLOWUP_ENROLLMENT_STATUSES, example: 'active' }) status!: string;
  @ApiProperty({ type: String, nullable: true, example: 'espera' }) node_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: AT }) next_run_at!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'why it stopped or is parked (replied, opted_out, flow_paused, an end outcome…)', example: null }) reason!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, example: { pedido: '1042' } }) variables!: Record<string, unknown>;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) anchor_at!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) sender_id!: string | null;
  @ApiProperty({ description: 'pass as expected_revision to control it', example: 1 }) revision!: number;
  @ApiProperty({ example: 0 }) failures!: number;
  @ApiProperty({ type: String, nullable: true, example: null }) last_error!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) finished_at!: string | null;
}

/** One event of an enrollment's history. */
export class EnrollmentEventDto {
  @ApiProperty({ format: 'uuid', example: '6b5a4938-2716-4e5d-8c4b-3a2918170f6e' }) id!: string;
  @ApiProperty({ example: 'node_entered' }) type!: string;
  @ApiProperty({ type: String, nullable: true, example: 'espera' }) node_id!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, example: {} }) data!: Record<string, unknown>;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
}

/** The template of a send or of a one-off return. */
export class TemplateRefDto {
  @ApiProperty({ example: 'retomada_conversa' }) name!: string;
  @ApiProperty({ example: 'pt_BR' }) language!: string;
  @ApiProperty({ type: [String], required: false, example: ['Ana'] }) parameters?: string[];
}

/** What a step did (`EffectView`). */
export class EffectDto {
  @ApiProperty({ format: 'uuid', example: '0e1d2c3b-4a59-4687-b7c6-d5e4f3a2b1c0' }) id!: string;
  @ApiProperty({ format: 'uuid', example: ENROLLMENT }) enrollment_id!: string;
  @ApiProperty({ example: 'mensagem' }) node_id!: string;
  @ApiProperty({ enum: ['send', 'classification', 'schedule_plan', 'action'], example: 'send' }) kind!: string;
  @ApiProperty({ enum: EFFECT_STATUSES, example: 'sent' }) status!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Oi Ana, tudo certo com o pedido?' }) text!: string | null;
  @ApiProperty({ type: TemplateRefDto, nullable: true }) template!: TemplateRefDto | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'model usage of AI-written steps', example: null }) usage!: Record<string, unknown> | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) message_id!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: "The send's idempotency key, carried unchanged by messaging and the outbox: an uncertain send's outbox entry is the one GET /outbox/ambiguous lists with this key. Null when the effect sends nothing",
    example: 'followup:3f2b8c1e-5d4a-4f6b-9e8d-7c6b5a4f3e2d:mensagem:1',
  })
  idempotency_key!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) sender_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) reason!: string | null;
  @ApiProperty({ type: String, enum: ['delivered', 'read'], nullable: true, description: 'How far the provider says a send got; null when not reported or not a send. Only moves forward', example: 'delivered' }) delivery_status!: 'delivered' | 'read' | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'When the provider reported the send delivered', example: AT }) delivered_at!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'When the provider reported the send read', example: null }) read_at!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) decided_at!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'how an uncertain send was reconciled: {outcome, note, wamid, at}', example: null }) resolution!: Record<string, unknown> | null;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
}

/** An effect as `GET /ai/followups/effects` lists it: the effect with its flow and contact (`EffectListItemView`). */
export class EffectListItemDto extends EffectDto {
  @ApiProperty({ format: 'uuid', example: FLOW }) flow_id!: string;
  @ApiProperty({ example: 'Pós-venda' }) flow_name!: string;
  @ApiProperty({ format: 'uuid', description: 'the flow version the enrollment runs', example: VERSION }) version_id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Ana Souza' }) contact_name!: string | null;
  @ApiProperty({ type: String, nullable: true, example: '+5511987654321' }) contact_phone!: string | null;
}

/** An enrollment with its events and effects (`EnrollmentDetailView`). */
export class EnrollmentDetailDto {
  @ApiProperty({ type: FollowupEnrollmentDto }) enrollment!: FollowupEnrollmentDto;
  @ApiProperty({ type: [EnrollmentEventDto] }) events!: EnrollmentEventDto[];
  @ApiProperty({ type: [EffectDto] }) effects!: EffectDto[];
}

/** One row of the queue (`QueueItemView`). */
export class QueueItemDto {
  @ApiProperty({ enum: ['enrollment', 'promise'], example: 'enrollment' }) kind!: string;
  @ApiProperty({ format: 'uuid', example: ENROLLMENT }) id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Ana Souza' }) contact_name!: string | null;
  @ApiProperty({ type: String, nullable: true, example: '+5511987654321' }) contact_phone!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) conversation_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: FLOW }) flow_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'Pós-venda' }) flow_name!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) agent_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) agent_name!: string | null;
  @ApiProperty({ example: 'active' }) status!: string;
  @ApiProperty({ type: String, nullable: true, example: 'espera' }) node_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: AT }) next_fire_at!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) reason!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ type: String, nullable: true, example: null }) last_error!: string | null;
}

/** The organization's follow-up settings (`FollowupSettingsView`). */
export class FollowupSettingsDto {
  @ApiProperty({ format: 'uuid', example: ORG }) customer_id!: string;
  @ApiProperty({ type: SendWindowDto, description: 'default send window of flows that set none' }) send_window!: SendWindowDto;
  @ApiProperty({ description: 'follow-up sends to one contact in any 24 hours', example: 3 }) contact_daily_cap!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'sends per calendar month (UTC); null = unlimited', example: null }) monthly_send_quota!: number | null;
  @ApiProperty({ enum: CONSENT_MODES, example: 'none' }) consent_mode!: string;
  @ApiProperty({ example: 'opt_in' }) consent_tag!: string;
  @ApiProperty({ type: Number, nullable: true, description: 'null = unlimited', example: null }) max_live_enrollments!: number | null;
  @ApiProperty({ description: 'finished enrollments are deleted after this many days', example: 180 }) retention_days!: number;
  @ApiProperty({ type: [ApprovedTemplateDto] }) approved_templates!: ApprovedTemplateDto[];
  @ApiProperty({ example: true, description: 'the follow-ups entitlement: false stops live enrollments at their next release (`plan_lost`)' }) followups_enabled!: boolean;
  @ApiProperty({ description: 'pass as expected_revision on the next update (0 before the first save)', example: 1 }) revision!: number;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
}

/** The answer of a decision (`EffectDecisionView`). */
export class EffectDecisionResultDto {
  @ApiProperty({ enum: [true], example: true }) ok!: true;
  @ApiProperty({ format: 'uuid', example: '0e1d2c3b-4a59-4687-b7c6-d5e4f3a2b1c0' }) id!: string;
  @ApiProperty({ enum: EFFECT_STATUSES, example: 'approved' }) status!: string;
}

/** The answer of a reconciliation. */
export class ResolvedDto {
  @ApiProperty({ enum: [true], example: true }) resolved!: true;
}

/** A one-off return (`PromiseView`). */
export class PromiseDto {
  @ApiProperty({ format: 'uuid', example: '5f4e3d2c-1b0a-4998-8877-665544332211' }) id!: string;
  @ApiProperty({ format: 'uuid', example: ORG }) customer_id!: string;
  @ApiProperty({ format: 'uuid', example: CONTACT }) contact_id!: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) conversation_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) agent_id!: string | null;
  @ApiProperty({ example: 'call-back-1042' }) operation_key!: string;
  @ApiProperty({ example: 'Cliente pediu retorno após falar com o sócio' }) reason!: string;
  @ApiProperty({ example: 'Retomar a proposta da cadeira ergonômica' }) promise!: string;
  @ApiProperty({ format: 'date-time', description: 'as asked', example: '2026-10-02T13:00:00.000Z' }) promised_at!: string;
  @ApiProperty({ format: 'date-time', description: 'when it fires: not before creation, moved into the send window', example: '2026-10-02T13:00:00.000Z' }) due_at!: string;
  @ApiProperty({ enum: PROMISE_OUTSIDE_WINDOW, example: 'alert' }) outside_window!: string;
  @ApiProperty({ type: PromiseTemplateDto, nullable: true }) template!: PromiseTemplateDto | null;
  @ApiProperty({ enum: PROMISE_STATUSES, example: 'scheduled' }) status!: string;
  @ApiProperty({ type: String, nullable: true, example: null }) last_error!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) cancel_reason!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) fired_at!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
}

export class PromiseContactDto {
  @ApiProperty({ format: 'uuid', example: CONTACT }) id!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Ana Souza' }) name!: string | null;
  @ApiProperty({ type: String, nullable: true, example: '+5511987654321' }) phone!: string | null;
}

export class PromiseAgentDto {
  @ApiProperty({ format: 'uuid', example: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f' }) id!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Sales assistant' }) name!: string | null;
}

export class PromiseRunDto {
  @ApiProperty({ type: String, nullable: true, example: null }) ai_run_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) message_key!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'why the turn was skipped, when it was', example: null }) skip_reason!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, example: null }) usage!: Record<string, unknown> | null;
}

export class PromiseAlertDto {
  @ApiProperty({ type: String, nullable: true, format: 'uuid', example: null }) notification_id!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) notified_at!: string;
}

/** A one-off return with its contact, agent, run and alert (`PromiseDetailView`). */
export class PromiseDetailDto extends PromiseDto {
  @ApiProperty({ type: PromiseContactDto }) contact!: PromiseContactDto;
  @ApiProperty({ type: PromiseAgentDto, nullable: true }) agent!: PromiseAgentDto | null;
  @ApiProperty({ type: PromiseRunDto, nullable: true }) run!: PromiseRunDto | null;
  @ApiProperty({ type: PromiseAlertDto, nullable: true, description: 'the team notification of outside_window alert' }) alert!: PromiseAlertDto | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, example: null }) resolution!: Record<string, unknown> | null;
}

/** Progress of a bulk enrollment job (`BulkJobView`): enrolled + sum(rejected) = processed ≤ total. */
export class BulkJobDto {
  @ApiProperty({ format: 'uuid', example: '9d8c7b6a-5f4e-4d3c-b2a1-0f9e8d7c6b5a' }) id!: string;
  @ApiProperty({ format: 'uuid', example: ORG }) customer_id!: string;
  @ApiProperty({ format: 'uuid', example: FLOW }) flow_id!: string;
  @ApiProperty({ example: 'campaign-march' }) operation_key!: string;
  @ApiProperty({ enum: ['list', 'segment'], example: 'list' }) source!: string;
  @ApiProperty({ enum: BULK_JOB_STATUSES, example: 'running' }) status!: string;
  @ApiProperty({ example: 120 }) total!: number;
  @ApiProperty({ example: 80 }) processed!: number;
  @ApiProperty({ example: 77 }) enrolled!: number;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, description: 'refusals by reason', example: { already_enrolled: 2, opted_out: 1 } }) rejected!: Record<string, number>;
  @ApiProperty({ type: String, nullable: true, example: null }) last_error!: string | null;
  @ApiProperty({ format: 'date-time', example: AT }) created_at!: string;
  @ApiProperty({ format: 'date-time', example: AT }) updated_at!: string;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null }) finished_at!: string | null;
}

/** One flow's results (`FlowStatsView`). */
export class FlowStatsDto {
  @ApiProperty({ format: 'uuid', example: FLOW }) flow_id!: string;
  @ApiProperty({ example: 120 }) enrolled!: number;
  @ApiProperty({ description: 'live now', example: 30 }) active!: number;
  @ApiProperty({ example: 80 }) completed!: number;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, description: 'cancelled or dead enrollments by reason', example: { opted_out: 6, handoff: 4 } }) stopped!: Record<string, number>;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, description: 'send effects by status', example: { sent: 150, failed: 2 } }) sends!: Record<string, number>;
  @ApiProperty({ example: 110 }) enrollments_with_send!: number;
  @ApiProperty({ example: 44 }) replied!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'replied / enrollments_with_send (4 decimals)', example: 0.4 }) reply_rate!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'seconds from the first send to the first reply', example: 3600 }) median_time_to_reply_seconds!: number | null;
}

export const FlowAnswerDto = dataEnvelope('FlowAnswerDto', FlowDto);
export const FlowListAnswerDto = dataEnvelope('FlowListAnswerDto', FlowDto, { isArray: true });
export const FlowModelListAnswerDto = dataEnvelope('FlowModelListAnswerDto', FlowModelDto, { isArray: true });
export const FlowVersionListAnswerDto = dataEnvelope('FlowVersionListAnswerDto', FlowVersionDto, { isArray: true });
export const FlowStatsAnswerDto = dataEnvelope('FlowStatsAnswerDto', FlowStatsDto);
export const FollowupEnrollmentPageDto = cursorPage('FollowupEnrollmentPageDto', FollowupEnrollmentDto);
export const FollowupEnrollmentPageAnswerDto = dataEnvelope('FollowupEnrollmentPageAnswerDto', FollowupEnrollmentPageDto);
export const FollowupEnrollmentAnswerDto = dataEnvelope('FollowupEnrollmentAnswerDto', FollowupEnrollmentDto);
export const FollowupEnrollmentCreatedDto = dataEnvelope('FollowupEnrollmentCreatedDto', FollowupEnrollmentDto, { created: true });
export const EnrollmentDetailAnswerDto = dataEnvelope('EnrollmentDetailAnswerDto', EnrollmentDetailDto);
export const QueuePageDto = cursorPage('QueuePageDto', QueueItemDto);
export const QueuePageAnswerDto = dataEnvelope('QueuePageAnswerDto', QueuePageDto);
export const FollowupSettingsAnswerDto = dataEnvelope('FollowupSettingsAnswerDto', FollowupSettingsDto);
export const EffectPageDto = cursorPage('EffectPageDto', EffectListItemDto);
export const EffectPageAnswerDto = dataEnvelope('EffectPageAnswerDto', EffectPageDto);
export const EffectDecisionAnswerDto = dataEnvelope('EffectDecisionAnswerDto', EffectDecisionResultDto);
export const ResolvedAnswerDto = dataEnvelope('ResolvedAnswerDto', ResolvedDto);
export const PromisePageDto = cursorPage('PromisePageDto', PromiseDto);
export const PromisePageAnswerDto = dataEnvelope('PromisePageAnswerDto', PromisePageDto);
export const PromiseAnswerDto = dataEnvelope('PromiseAnswerDto', PromiseDto);
export const PromiseCreatedDto = dataEnvelope('PromiseCreatedDto', PromiseDto, { created: true });
export const PromiseDetailAnswerDto = dataEnvelope('PromiseDetailAnswerDto', PromiseDetailDto);
export const BulkJobAnswerDto = dataEnvelope('BulkJobAnswerDto', BulkJobDto);
export const BulkJobCreatedDto = dataEnvelope('BulkJobCreatedDto', BulkJobDto, { created: true });
