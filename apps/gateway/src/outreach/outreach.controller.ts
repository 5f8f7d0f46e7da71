import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type OutreachActor, OutreachRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import {
  ActionDto,
  ActionParams,
  ApproveBody,
  CampaignDeletedDto,
  CampaignDto,
  CampaignListDto,
  CampaignParams,
  CreateCampaignBody,
  EnrollBatchBody,
  EnrollBatchResultDto,
  OutreachEnrollmentDto,
  OutreachEnrollmentListDto,
  EnrollmentParams,
  ListCampaignsQuery,
  ListOutreachEnrollmentsQuery,
  PersonBody,
  RejectBody,
  ReviewQueueDto,
  ReviewQueueQuery,
  OutreachSettingsDto,
  TimelineDto,
} from './dto/outreach.dto.js';

/**
 * Who acts on a review route, as the credential proves it: the current member the key acts for
 * (any member may review, seed 003 §4.5), the key, and whether the key was issued for support
 * impersonation. Nothing in the request can change any of it.
 */
function actorOf(caller: Caller): OutreachActor {
  return { member_id: caller.createdBy.memberId, api_key_id: caller.apiKeyId, impersonated: caller.impersonatedBy !== null };
}

/**
 * `/agentic/outreach/*` (seed 003 §4.1, §4.5, §6): campaigns, the organization-wide stop,
 * enrollment, the review queue and the enrollment timeline. Every handler forwards to the
 * outreach service by RPC; the rules live there.
 */
@ApiTags('outreach')
@Controller('agentic/outreach')
export class OutreachController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Post('campaigns')
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Creates a campaign (status active)' })
  @ApiCreatedResponse({ type: CampaignDto })
  @ApiErrorResponses(400, 503)
  createCampaign(@CurrentCaller() caller: Caller, @Body() body: CreateCampaignBody) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.CampaignCreate, body);
  }

  @Get('campaigns')
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: 'Lists the campaigns, newest first' })
  @ApiOkResponse({ type: CampaignListDto })
  @ApiErrorResponses(400, 503)
  listCampaigns(@CurrentCaller() caller: Caller, @Query() query: ListCampaignsQuery) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.CampaignList, query);
  }

  @Get('campaigns/:campaign_id')
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: 'Gets a campaign' })
  @ApiOkResponse({ type: CampaignDto })
  @ApiErrorResponses(404, 503)
  getCampaign(@CurrentCaller() caller: Caller, @Param() params: CampaignParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.CampaignGet, params);
  }

  @Post('campaigns/:campaign_id/pause')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'active → paused: decisions, sends and the sweep skip the campaign; enrollments are still accepted' })
  @ApiOkResponse({ type: CampaignDto })
  @ApiErrorResponses(404, 409, 503)
  pause(@CurrentCaller() caller: Caller, @Param() params: CampaignParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.CampaignPause, params);
  }

  @Post('campaigns/:campaign_id/resume')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'paused → active: the sweep picks up what came due during the pause' })
  @ApiOkResponse({ type: CampaignDto })
  @ApiErrorResponses(404, 409, 503)
  resume(@CurrentCaller() caller: Caller, @Param() params: CampaignParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.CampaignResume, params);
  }

  @Post('campaigns/:campaign_id/archive')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Archives the campaign (final): live enrollments end campaign_archived, their drafts are invalidated' })
  @ApiOkResponse({ type: CampaignDto })
  @ApiErrorResponses(404, 503)
  archive(@CurrentCaller() caller: Caller, @Param() params: CampaignParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.CampaignArchive, params);
  }

  @Delete('campaigns/:campaign_id')
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Deletes a campaign that never had an enrollment (409 campaign_has_enrollments otherwise: archive it)' })
  @ApiOkResponse({ type: CampaignDeletedDto })
  @ApiErrorResponses(404, 409, 503)
  deleteCampaign(@CurrentCaller() caller: Caller, @Param() params: CampaignParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.CampaignDelete, params);
  }

  @Post('campaigns/:campaign_id/enrollments')
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({
    summary: 'Enrolls one person: 201 new, 200 when already live in this campaign',
    description: '409 already_enrolled (live in another campaign; details name it and its status), campaign_full, opted_out, campaign_archived; 404 for an unknown campaign or person.',
  })
  @ApiCreatedResponse({ type: OutreachEnrollmentDto })
  @ApiErrorResponses(400, 404, 409, 503)
  async enrollOne(@CurrentCaller() caller: Caller, @Param() params: CampaignParams, @Body() body: PersonBody, @Res({ passthrough: true }) reply: { status(code: number): unknown }) {
    const { created, ...view } = await this.forwarder.forward(caller, 'outreach', OutreachRpc.EnrollOne, { ...params, ...body });
    reply.status(created ? 201 : 200);
    return view;
  }

  @Post('campaigns/:campaign_id/enrollments/batch')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Enrolls up to 200 people; one result per person in order (added, already_enrolled, campaign_full, opted_out, not_found); 422 batch_too_large above 200' })
  @ApiOkResponse({ type: EnrollBatchResultDto })
  @ApiErrorResponses(400, 404, 409, 422, 503)
  enrollBatch(@CurrentCaller() caller: Caller, @Param() params: CampaignParams, @Body() body: EnrollBatchBody) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.EnrollBatch, { ...params, people: body.people });
  }

  @Get('campaigns/:campaign_id/enrollments')
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: "Lists a campaign's enrollments" })
  @ApiOkResponse({ type: OutreachEnrollmentListDto })
  @ApiErrorResponses(400, 404, 422, 503)
  listEnrollments(@CurrentCaller() caller: Caller, @Param() params: CampaignParams, @Query() query: ListOutreachEnrollmentsQuery) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.EnrollmentList, { ...params, ...query });
  }

  @Get('enrollments/:enrollment_id')
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: 'Gets an outreach enrollment with its state' })
  @ApiOkResponse({ type: OutreachEnrollmentDto })
  @ApiErrorResponses(404, 503)
  getEnrollment(@CurrentCaller() caller: Caller, @Param() params: EnrollmentParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.EnrollmentGet, params);
  }

  @Post('enrollments/:enrollment_id/exit')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Exits the person from the campaign (ended user_exit)' })
  @ApiOkResponse({ type: OutreachEnrollmentDto })
  @ApiErrorResponses(404, 409, 503)
  exit(@CurrentCaller() caller: Caller, @Param() params: EnrollmentParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.EnrollmentExit, params);
  }

  @Post('enrollments/:enrollment_id/manual-retry')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'needs_contact_data → active after contact data was added; a new decision runs' })
  @ApiOkResponse({ type: OutreachEnrollmentDto })
  @ApiErrorResponses(404, 409, 503)
  manualRetry(@CurrentCaller() caller: Caller, @Param() params: EnrollmentParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.EnrollmentManualRetry, params);
  }

  @Get('enrollments/:enrollment_id/timeline')
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: "One enrollment's history: enrolled, decisions, actions, thread emails, LinkedIn messages, ended; newest first" })
  @ApiOkResponse({ type: TimelineDto })
  @ApiErrorResponses(404, 503)
  timeline(@CurrentCaller() caller: Caller, @Param() params: EnrollmentParams) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.EnrollmentTimeline, params);
  }

  @Get('actions')
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: 'The review queue: pending drafts, oldest first, with the queue total' })
  @ApiOkResponse({ type: ReviewQueueDto })
  @ApiErrorResponses(400, 503)
  reviewQueue(@CurrentCaller() caller: Caller, @Query() query: ReviewQueueQuery) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.ActionList, query);
  }

  @Post('actions/:action_id/approve')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({
    summary: 'Approves a draft, as written or edited',
    description: '403 for an impersonated session (a key issued for support impersonation); 409 enrollment_not_active, campaign_not_active, outreach_stopped, action_not_pending; 422 with the draft check code for an edit that fails it. A retry with the same text answers 200.',
  })
  @ApiOkResponse({ type: ActionDto })
  @ApiErrorResponses(400, 403, 404, 409, 422, 503)
  approve(@CurrentCaller() caller: Caller, @Param() params: ActionParams, @Body() body: ApproveBody) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.ActionApprove, { ...params, payload: body.payload, actor: actorOf(caller) });
  }

  @Post('actions/:action_id/reject')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Rejects a draft: regenerate (a reason of 1 to 1000 characters) asks for a new one; stop ends the enrollment (user_exit)' })
  @ApiOkResponse({ type: ActionDto })
  @ApiErrorResponses(400, 403, 404, 409, 503)
  reject(@CurrentCaller() caller: Caller, @Param() params: ActionParams, @Body() body: RejectBody) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.ActionReject, { ...params, then: body.then, reason: body.reason, actor: actorOf(caller) });
  }

  @Get('settings')
  @RequireKey({ scopes: [Scope.OutreachRead] })
  @ApiOperation({ summary: "The organization's outreach settings" })
  @ApiOkResponse({ type: OutreachSettingsDto })
  @ApiErrorResponses(503)
  settings(@CurrentCaller() caller: Caller) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.SettingsGet);
  }

  @Post('stop')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Stops outreach for the whole organization: no decision, no send, no sweep until resumed' })
  @ApiOkResponse({ type: OutreachSettingsDto })
  @ApiErrorResponses(503)
  stop(@CurrentCaller() caller: Caller) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.Stop);
  }

  @Post('resume')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.OutreachWrite] })
  @ApiOperation({ summary: 'Resumes outreach for the organization' })
  @ApiOkResponse({ type: OutreachSettingsDto })
  @ApiErrorResponses(503)
  resumeOrganization(@CurrentCaller() caller: Caller) {
    return this.forwarder.forward(caller, 'outreach', OutreachRpc.Resume);
  }
}
