import { Body, Controller, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { FollowupsRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { CreateFlowDto, CreateFromModelDto, CustomerQuery, FlowIdParams, OptionalCustomerQuery, PublishFlowDto, RollbackFlowDto, SetFlowStatusDto, UpdateFlowDto } from './dto/followups.dto.js';
import { FlowAnswerDto, FlowListAnswerDto, FlowModelListAnswerDto, FlowStatsAnswerDto, FlowVersionListAnswerDto } from './dto/followups-responses.dto.js';

/** Follow-up flows (seed 002 "Fluxos"), forwarded to followups. Answers are `{data: ...}`. */
@ApiTags('followup-flows')
@Controller('ai/followup-flows')
export class FollowupFlowsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get()
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'Flows with their draft (graph), settings, status and published_version_id' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: FlowListAnswerDto })
  list(@CurrentCaller() caller: Caller, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowList);
  }

  @Post()
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Create a flow as a draft (201)' })
  @ApiErrorResponses(400, 404, 503)
  @ApiCreatedResponse({ type: FlowAnswerDto })
  create(@CurrentCaller() caller: Caller, @Body() body: CreateFlowDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowCreate, { name: body.name, graph: body.graph, settings: body.settings });
  }

  @Get('from-model')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'Ready-made flows: id, name, summary, journey, trigger_description, requires_stage, max_messages' })
  @ApiErrorResponses(404, 503)
  @ApiOkResponse({ type: FlowModelListAnswerDto })
  models(@CurrentCaller() caller: Caller, @Query() _query: OptionalCustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowModels);
  }

  @Post('from-model')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Create a draft flow from a model (201); 422 stage_required when the model needs stage_id' })
  @ApiErrorResponses(400, 404, 422, 503)
  @ApiCreatedResponse({ type: FlowAnswerDto })
  createFromModel(@CurrentCaller() caller: Caller, @Body() body: CreateFromModelDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowCreateFromModel, { model_id: body.model_id, name: body.name, stage_id: body.stage_id });
  }

  @Get(':id')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'A flow' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: FlowAnswerDto })
  get(@CurrentCaller() caller: Caller, @Param() params: FlowIdParams, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowGet, { flow_id: params.id });
  }

  @Put(':id')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Save the draft; the published version does not change (409 revision_conflict on a stale expected_revision)' })
  @ApiErrorResponses(400, 404, 409, 503)
  @ApiOkResponse({ type: FlowAnswerDto })
  update(@CurrentCaller() caller: Caller, @Param() params: FlowIdParams, @Body() body: UpdateFlowDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowUpdate, { flow_id: params.id, expected_revision: body.expected_revision, name: body.name, graph: body.graph, settings: body.settings });
  }

  @Patch(':id')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Set the status: active (needs a published version, else 422 publish_required), paused or archived' })
  @ApiErrorResponses(400, 404, 409, 422, 503)
  @ApiOkResponse({ type: FlowAnswerDto })
  setStatus(@CurrentCaller() caller: Caller, @Param() params: FlowIdParams, @Body() body: SetFlowStatusDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowSetStatus, { flow_id: params.id, expected_revision: body.expected_revision, status: body.status });
  }

  @Post(':id/publish')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({
    summary: 'Publish the draft as a new immutable version',
    description: 'Checks reach, paths to an end, covered exits, cycles without a wait, waits, templates and the 24-hour window. On failure: 422 `invalid_graph` with `error.details.validation_errors: [{node_id, code, message, branch_id}]`.',
  })
  @ApiErrorResponses(400, 404, 409, 422, 503)
  @ApiOkResponse({ type: FlowAnswerDto })
  publish(@CurrentCaller() caller: Caller, @Param() params: FlowIdParams, @Body() body: PublishFlowDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowPublish, { flow_id: params.id, expected_revision: body.expected_revision });
  }

  @Get(':id/versions')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'Published versions, newest first' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: FlowVersionListAnswerDto })
  versions(@CurrentCaller() caller: Caller, @Param() params: FlowIdParams, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowVersions, { flow_id: params.id });
  }

  @Get(':id/stats')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: "The flow's results: enrolled, active, completed, stopped by reason, sends by status, reply rate, median time to reply" })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: FlowStatsAnswerDto })
  stats(@CurrentCaller() caller: Caller, @Param() params: FlowIdParams, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowStats, { flow_id: params.id });
  }

  @Post(':id/rollback')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Publish an older version again, with the same checks as publish (the draft becomes that version)' })
  @ApiErrorResponses(400, 404, 409, 422, 503)
  @ApiOkResponse({ type: FlowAnswerDto })
  rollback(@CurrentCaller() caller: Caller, @Param() params: FlowIdParams, @Body() body: RollbackFlowDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.FlowRollback, { flow_id: params.id, expected_revision: body.expected_revision, version_id: body.version_id });
  }
}
