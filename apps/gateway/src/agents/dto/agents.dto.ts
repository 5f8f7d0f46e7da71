import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsInt, IsISO8601, IsNotEmpty, IsObject, IsOptional, IsString, IsUUID, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { AGENT_MAX_FLOWS, TURN_MAX_PROMISES, TURN_PROMISE_LIST_DEFAULT_LIMIT, TURN_PROMISE_LIST_MAX_LIMIT, TURN_PROMISE_TEXT_MAX } from '@touchpoint/contracts';
import { CustomerQuery } from '../../followups/dto/followups.dto.js';

const AGENT_ID_EXAMPLE = '44444444-4444-4444-8444-444444444444';
const FLOW_ID_EXAMPLE = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';

/** `followup` of an agent version (seed 002: enable it and list the flows for the agent to enroll contacts). */
export class AgentFollowupDto {
  @ApiProperty({ example: true, description: 'false: the agent may not enroll anyone (422 agent_followup_disabled)' }) @IsBoolean() enabled!: boolean;
  @ApiProperty({ type: [String], format: 'uuid', maxItems: AGENT_MAX_FLOWS, example: [FLOW_ID_EXAMPLE], description: 'The only flows the agent may enroll into (422 flow_not_allowed_for_agent otherwise)' })
  @IsArray()
  @ArrayMaxSize(AGENT_MAX_FLOWS)
  @IsUUID('all', { each: true })
  flow_ids!: string[];
}

/** Body of `POST /ai/agents`. */
export class CreateAgentDto extends CustomerQuery {
  @ApiProperty({ maxLength: 200, example: 'Atendimento' }) @IsString() @IsNotEmpty() @MaxLength(200) name!: string;
  @ApiProperty({ type: AgentFollowupDto }) @IsObject() @ValidateNested() @Type(() => AgentFollowupDto) followup!: AgentFollowupDto;
}

/** Body of `POST /ai/agents/{id}/versions`: the new version becomes the current one. */
export class CreateAgentVersionDto extends CustomerQuery {
  @ApiPropertyOptional({ maxLength: 200, example: 'Atendimento', description: 'A new name; default: the current one' }) @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) name?: string;
  @ApiProperty({ type: AgentFollowupDto }) @IsObject() @ValidateNested() @Type(() => AgentFollowupDto) followup!: AgentFollowupDto;
}

export class AgentIdParams {
  @ApiProperty({ format: 'uuid', example: AGENT_ID_EXAMPLE }) @IsUUID('all') id!: string;
}

/** One promise an agent made in a turn. */
export class TurnPromiseInputDto {
  @ApiProperty({ maxLength: TURN_PROMISE_TEXT_MAX, example: 'Enviar a proposta revisada amanhã cedo' }) @IsString() @IsNotEmpty() @MaxLength(TURN_PROMISE_TEXT_MAX) text!: string;
  @ApiPropertyOptional({ example: '2026-10-03T12:00:00Z', description: 'When the agent said it would do it (ISO-8601)' }) @IsOptional() @IsISO8601({ strict: true }) due_at?: string;
}

/** Body of `POST /ai/agents/{id}/promises`: what the agent runtime heard its agent promise in one turn. */
export class RecordTurnPromisesDto extends CustomerQuery {
  @ApiProperty({ maxLength: 200, example: 'turn_01J9Z7K3', description: "The runtime's id of the turn: recording it again returns what was recorded first" }) @IsString() @IsNotEmpty() @MaxLength(200) turn_id!: string;
  @ApiProperty({ format: 'uuid', example: '88888888-8888-4888-8888-888888888888' }) @IsUUID('all') contact_id!: string;
  @ApiPropertyOptional({ format: 'uuid', example: '99999999-9999-4999-8999-999999999999' }) @IsOptional() @IsUUID('all') conversation_id?: string;
  @ApiProperty({ type: [TurnPromiseInputDto], minItems: 1, maxItems: TURN_MAX_PROMISES })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(TURN_MAX_PROMISES)
  @ValidateNested({ each: true })
  @Type(() => TurnPromiseInputDto)
  promises!: TurnPromiseInputDto[];
}

/** Query of `GET /ai/promises`. */
export class ListTurnPromisesQuery extends CustomerQuery {
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') agent_id?: string;
  @ApiPropertyOptional({ format: 'uuid' }) @IsOptional() @IsUUID('all') contact_id?: string;
  @ApiPropertyOptional({ maxLength: 200 }) @IsOptional() @IsString() @MaxLength(200) turn_id?: string;
  @ApiPropertyOptional({ description: 'next_cursor of the previous page' }) @IsOptional() @IsString() @MaxLength(1024) cursor?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: TURN_PROMISE_LIST_MAX_LIMIT, default: TURN_PROMISE_LIST_DEFAULT_LIMIT }) @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(TURN_PROMISE_LIST_MAX_LIMIT) limit?: number;
}

// ---- answers ----

export class AgentDto {
  @ApiProperty({ format: 'uuid', example: AGENT_ID_EXAMPLE }) id!: string;
  @ApiProperty({ format: 'uuid', example: '11111111-1111-4111-8111-111111111111' }) customer_id!: string;
  @ApiProperty({ example: 'Atendimento' }) name!: string;
  @ApiProperty({ example: 2, description: 'The current version' }) version!: number;
  @ApiProperty({ type: AgentFollowupDto }) followup!: AgentFollowupDto;
  @ApiProperty({ example: '2026-09-25T13:00:00.000Z' }) created_at!: string;
  @ApiProperty({ example: '2026-09-26T09:30:00.000Z' }) updated_at!: string;
}

export class AgentVersionDto {
  @ApiProperty({ example: 1 }) version!: number;
  @ApiProperty({ type: AgentFollowupDto }) followup!: AgentFollowupDto;
  @ApiProperty({ example: '2026-09-25T13:00:00.000Z' }) created_at!: string;
}

export class AgentDetailDto extends AgentDto {
  @ApiProperty({ type: [AgentVersionDto], description: 'Every version, newest first' }) versions!: AgentVersionDto[];
}

export class AgentEnvelopeDto {
  @ApiProperty({ type: AgentDto }) data!: AgentDto;
}
export class AgentDetailEnvelopeDto {
  @ApiProperty({ type: AgentDetailDto }) data!: AgentDetailDto;
}
export class AgentListEnvelopeDto {
  @ApiProperty({ type: [AgentDto] }) data!: AgentDto[];
}

export class TurnPromiseDto {
  @ApiProperty({ format: 'uuid', example: '15151515-1515-4151-8151-151515151515' }) id!: string;
  @ApiProperty({ format: 'uuid', example: '11111111-1111-4111-8111-111111111111' }) customer_id!: string;
  @ApiProperty({ format: 'uuid', example: AGENT_ID_EXAMPLE }) agent_id!: string;
  @ApiProperty({ type: String, nullable: true, example: 'Atendimento' }) agent_name!: string | null;
  @ApiProperty({ example: 'turn_01J9Z7K3' }) turn_id!: string;
  @ApiProperty({ example: 0, description: 'Order within the turn' }) position!: number;
  @ApiProperty({ format: 'uuid', example: '88888888-8888-4888-8888-888888888888' }) contact_id!: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, example: '99999999-9999-4999-8999-999999999999' }) conversation_id!: string | null;
  @ApiProperty({ example: 'Enviar a proposta revisada amanhã cedo' }) text!: string;
  @ApiProperty({ type: String, nullable: true, example: '2026-10-03T12:00:00.000Z' }) due_at!: string | null;
  @ApiProperty({ example: '2026-10-02T18:04:11.000Z' }) created_at!: string;
}

export class TurnPromisesRecordedDto {
  @ApiProperty({ type: [TurnPromiseDto], description: "The turn's promises, in order" }) data!: TurnPromiseDto[];
  @ApiProperty({ example: true, description: 'false when this turn had been recorded before' }) created!: boolean;
}

export class TurnPromisePageDto {
  @ApiProperty({ type: [TurnPromiseDto] }) data!: TurnPromiseDto[];
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Pass as `cursor` for the next page; null on the last' }) next_cursor!: string | null;
}
export class TurnPromisePageEnvelopeDto {
  @ApiProperty({ type: TurnPromisePageDto }) data!: TurnPromisePageDto;
}
