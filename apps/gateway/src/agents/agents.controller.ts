import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AgentsRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { CustomerQuery } from '../followups/dto/followups.dto.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { AgentDetailEnvelopeDto, AgentEnvelopeDto, AgentIdParams, AgentListEnvelopeDto, CreateAgentDto, CreateAgentVersionDto, ListTurnPromisesQuery, RecordTurnPromisesDto, TurnPromisePageEnvelopeDto, TurnPromisesRecordedDto } from './dto/agents.dto.js';

/**
 * The agents registry and turn promises (seed 002 "Follow-ups e retornos"), forwarded to
 * followups: agents with versions whose `followup.enabled` / `followup.flow_ids` bound their
 * enrollments, the runtime's record of a turn's promises, and `GET /ai/promises` to read them.
 */
@ApiTags('agents')
@Controller('ai')
export class AgentsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get('agents')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: "The organization's agents with their current version, newest first" })
  @ApiOkResponse({ type: AgentListEnvelopeDto })
  @ApiErrorResponses(400, 404, 503)
  list(@CurrentCaller() caller: Caller, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', AgentsRpc.AgentList);
  }

  @Post('agents')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Register an agent (201) with its first version', description: "404 `not_found` when a flow of `followup.flow_ids` is not the organization's." })
  @ApiCreatedResponse({ type: AgentEnvelopeDto })
  @ApiErrorResponses(400, 404, 503)
  create(@CurrentCaller() caller: Caller, @Body() body: CreateAgentDto) {
    const { customer_id: _c, ...data } = body;
    return this.forwarder.forward(caller, 'followups', AgentsRpc.AgentCreate, data);
  }

  @Get('agents/:id')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'An agent with every version, newest first' })
  @ApiOkResponse({ type: AgentDetailEnvelopeDto })
  @ApiErrorResponses(400, 404, 503)
  get(@CurrentCaller() caller: Caller, @Param() params: AgentIdParams, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', AgentsRpc.AgentGet, { agent_id: params.id });
  }

  @Post('agents/:id/versions')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Publish a new version of an agent (201); it becomes the current one, earlier versions are kept' })
  @ApiCreatedResponse({ type: AgentEnvelopeDto })
  @ApiErrorResponses(400, 404, 503)
  createVersion(@CurrentCaller() caller: Caller, @Param() params: AgentIdParams, @Body() body: CreateAgentVersionDto) {
    const { customer_id: _c, ...data } = body;
    return this.forwarder.forward(caller, 'followups', AgentsRpc.AgentVersionCreate, { ...data, agent_id: params.id });
  }

  @Post('agents/:id/promises')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({
    summary: 'Record what the agent promised in a turn (201); the same turn_id again returns the first record',
    description: 'For the agent runtime. Read-only afterwards (`GET /ai/promises`); nothing is scheduled — a one-off return is `POST /ai/followups/promises`.',
  })
  @ApiCreatedResponse({ type: TurnPromisesRecordedDto })
  @ApiErrorResponses(400, 404, 503)
  recordPromises(@CurrentCaller() caller: Caller, @Param() params: AgentIdParams, @Body() body: RecordTurnPromisesDto) {
    const { customer_id: _c, ...data } = body;
    return this.forwarder.forward(caller, 'followups', AgentsRpc.TurnPromisesRecord, { ...data, agent_id: params.id });
  }

  /** Seed 002 `GET /ai/promises`: the read-only registry of what agents said they would do in a turn. */
  @Get('promises')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'Read-only registry of the promises agents made in their turns, newest first: `{data: {data: [...], next_cursor}}` (limit 1–100, default 30)', description: '422 `invalid_cursor` when the cursor is bad or stale.' })
  @ApiOkResponse({ type: TurnPromisePageEnvelopeDto })
  @ApiErrorResponses(400, 404, 422, 503)
  promises(@CurrentCaller() caller: Caller, @Query() query: ListTurnPromisesQuery) {
    const { customer_id: _c, ...filters } = query;
    return this.forwarder.forward(caller, 'followups', AgentsRpc.TurnPromiseList, filters);
  }
}
