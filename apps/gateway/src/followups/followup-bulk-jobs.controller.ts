import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { FollowupsRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { BulkJobIdParams, CreateBulkJobDto, CustomerQuery } from './dto/followups.dto.js';
import { BulkJobAnswerDto, BulkJobCreatedDto } from './dto/followups-responses.dto.js';

/** Bulk enrollment jobs, forwarded to followups: create one, then read its progress. */
@ApiTags('followups')
@Controller('ai/followups/bulk-enrollments')
export class FollowupBulkJobsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Post()
  @RequireKey({ scopes: [Scope.AgentsWrite] })
  @ApiOperation({ summary: 'Enroll a contact list or a segment (frozen now) in a flow, in the background (201 with the job)' })
  @ApiErrorResponses(400, 404, 409, 503)
  @ApiCreatedResponse({ type: BulkJobCreatedDto })
  create(@CurrentCaller() caller: Caller, @Body() body: CreateBulkJobDto) {
    const { customer_id: _c, ...data } = body;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.BulkJobCreate, data);
  }

  @Get(':id')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: "A job's progress: status, total, processed, enrolled, rejected by reason" })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: BulkJobAnswerDto })
  get(@CurrentCaller() caller: Caller, @Param() params: BulkJobIdParams, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.BulkJobGet, { job_id: params.id });
  }
}
