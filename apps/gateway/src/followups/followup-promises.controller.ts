import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { FollowupsRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { CancelPromiseDto, CreatePromiseDto, CustomerQuery, ListPromisesQuery, PromiseIdParams, ResolvePromiseDto } from './dto/followups.dto.js';
import { PromiseAnswerDto, PromiseCreatedDto, PromiseDetailAnswerDto, PromisePageAnswerDto, ResolvedAnswerDto } from './dto/followups-responses.dto.js';

/** One-off returns (seed 002 "Retornos avulsos"), forwarded to followups. Writes need a key created by an admin. */
@ApiTags('followups')
@Controller('ai')
export class FollowupPromisesController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get('followups/promises')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'One-off returns, newest first: `{data: {data: [...], next_cursor}}` (limit 1–100, default 30)' })
  @ApiErrorResponses(400, 404, 422, 503)
  @ApiOkResponse({ type: PromisePageAnswerDto })
  list(@CurrentCaller() caller: Caller, @Query() query: ListPromisesQuery) {
    const { customer_id: _c, ...filters } = query;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.PromiseList, filters);
  }

  @Post('followups/promises')
  @RequireKey({ scopes: [Scope.AgentsWrite], adminCreatedKey: true })
  @ApiOperation({
    summary: 'Schedule a one-off return (201; due_at is the effective time); repeating the operation_key returns the same',
    description: "409 `already_pending` when the contact has a pending return; 409 `conflict` (details.reason `plan_lost`) when the organization's plan does not include follow-ups.",
  })
  @ApiErrorResponses(400, 403, 404, 409, 503)
  @ApiCreatedResponse({ type: PromiseCreatedDto })
  create(@CurrentCaller() caller: Caller, @Body() body: CreatePromiseDto) {
    const { customer_id: _c, ...data } = body;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.PromiseCreate, data);
  }

  @Get('followups/promises/:id')
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({ summary: 'A return with its contact, agent, run (with skip_reason) and alert' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: PromiseDetailAnswerDto })
  get(@CurrentCaller() caller: Caller, @Param() params: PromiseIdParams, @Query() _query: CustomerQuery) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.PromiseGet, { promise_id: params.id });
  }

  @Post('followups/promises/:id/cancel')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.AgentsWrite], adminCreatedKey: true })
  @ApiOperation({ summary: 'Cancel a return (idempotent); 409 `already_terminal` once it fired' })
  @ApiErrorResponses(400, 403, 404, 409, 503)
  @ApiOkResponse({ type: PromiseAnswerDto })
  cancel(@CurrentCaller() caller: Caller, @Param() params: PromiseIdParams, @Body() body: CancelPromiseDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.PromiseCancel, { promise_id: params.id, ...(body.reason ? { reason: body.reason } : {}) });
  }

  @Post('followups/promises/:id/resolve')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.AgentsWrite], adminCreatedKey: true })
  @ApiOperation({ summary: 'Reconcile the template of a return whose status is unknown: `{data: {resolved: true}}`', description: '409 `not_ambiguous` when it is not unknown.' })
  @ApiErrorResponses(400, 403, 404, 409, 503)
  @ApiOkResponse({ type: ResolvedAnswerDto })
  resolve(@CurrentCaller() caller: Caller, @Param() params: PromiseIdParams, @Body() body: ResolvePromiseDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.PromiseResolve, {
      promise_id: params.id,
      outcome: body.outcome,
      note: body.note,
      ...(body.wamid ? { wamid: body.wamid } : {}),
      api_key_id: caller.apiKeyId,
      member_id: caller.createdBy.memberId,
    });
  }
}
