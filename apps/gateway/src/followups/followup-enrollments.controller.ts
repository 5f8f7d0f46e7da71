import { Body, Controller, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { FollowupsRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { ControlEnrollmentDto, CreateEnrollmentDto, CustomerQuery, EnrollmentIdParams, ListEnrollmentsQuery, QueueQuery, SetEntitlementDto, UpdateSettingsDto } from './dto/followups.dto.js';
import { EnrollmentDetailAnswerDto, FollowupEnrollmentAnswerDto, FollowupEnrollmentCreatedDto, FollowupEnrollmentPageAnswerDto, FollowupSettingsAnswerDto, QueuePageAnswerDto } from './dto/followups-responses.dto.js';

/** Enrollments, the queue and organization settings (seed 002 "Inscrições", "Fila"), forwarded to followups. */
@ApiTags('followups')
@Controller('ai/followups')
export class FollowupEnrollmentsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get('enrollments')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'Enrollments, newest first: `{data: {data: [...], next_cursor}}` (limit 1–200, default 100)' })
  @ApiErrorResponses(400, 404, 422, 503)
  @ApiOkResponse({ type: FollowupEnrollmentPageAnswerDto })
  list(@CurrentCaller() caller: Caller, @Query() query: ListEnrollmentsQuery) {
    const { customer_id: _c, ...filters } = query;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.EnrollmentList, filters);
  }

  @Post('enrollments')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({
    summary: 'Enroll a contact (201); repeating the operation_key returns the same enrollment',
    description: '409 `already_enrolled` when the contact has a live enrollment in the flow; 422 `publish_required` when the flow has no published version; 409 `conflict` when the flow is not active, the contact opted out, or the plan limit is reached.',
  })
  @ApiErrorResponses(400, 404, 409, 422, 503)
  @ApiCreatedResponse({ type: FollowupEnrollmentCreatedDto })
  create(@CurrentCaller() caller: Caller, @Body() body: CreateEnrollmentDto) {
    const { customer_id: _c, ...data } = body;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.EnrollmentCreate, data);
  }

  @Get('enrollments/:id')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'An enrollment with its events and effects (sends, classifications, schedule plans)' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: EnrollmentDetailAnswerDto })
  get(@CurrentCaller() caller: Caller, @Param() params: EnrollmentIdParams, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.EnrollmentGet, { enrollment_id: params.id });
  }

  @Post('enrollments/:id/control')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Pause, resume, cancel, or run the current wait now (advance_now); 409 dispatch_busy while a send is in flight or uncertain' })
  @ApiErrorResponses(400, 404, 409, 503)
  @ApiOkResponse({ type: FollowupEnrollmentAnswerDto })
  control(@CurrentCaller() caller: Caller, @Param() params: EnrollmentIdParams, @Body() body: ControlEnrollmentDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.EnrollmentControl, { enrollment_id: params.id, expected_revision: body.expected_revision, action: body.action, reason: body.reason });
  }

  @Get('queue')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'Enrollments and one-off returns in one list (cursor; 422 invalid_cursor when bad or stale)' })
  @ApiErrorResponses(400, 404, 422, 503)
  @ApiOkResponse({ type: QueuePageAnswerDto })
  queue(@CurrentCaller() caller: Caller, @Query() query: QueueQuery) {
    const { customer_id: _c, ...filters } = query;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.QueueList, filters);
  }

  @Get('settings')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: "The organization's follow-up settings (send window, caps, quota, consent, plan limit, retention, approved templates)" })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: FollowupSettingsAnswerDto })
  settings(@CurrentCaller() caller: Caller, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.SettingsGet);
  }

  @Put('settings')
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Update follow-up settings (409 revision_conflict on a stale expected_revision)' })
  @ApiErrorResponses(400, 404, 409, 503)
  @ApiOkResponse({ type: FollowupSettingsAnswerDto })
  updateSettings(@CurrentCaller() caller: Caller, @Body() body: UpdateSettingsDto) {
    const { customer_id: _c, ...data } = body;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.SettingsUpdate, data);
  }

  @Put('settings/entitlement')
  @RequireKey({ scopes: [Scope.Admin] })
  @ApiOperation({
    summary: "Turn the organization's follow-ups entitlement on or off (admin or billing)",
    description: 'With `followups_enabled: false` every live enrollment stops at its next release with reason `plan_lost`, and new enrollments answer 409 `conflict` (`plan_lost`). Setting it again is harmless.',
  })
  @ApiOkResponse({ type: FollowupSettingsAnswerDto })
  @ApiErrorResponses(400, 401, 403, 404, 503)
  setEntitlement(@CurrentCaller() caller: Caller, @Body() body: SetEntitlementDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.SettingsSetEntitlement, { followups_enabled: body.followups_enabled });
  }
}
