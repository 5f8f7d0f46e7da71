import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { FollowupsRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { EffectDecisionDto, EffectIdParams, EffectResolveDto, ListEffectsQuery } from './dto/followups.dto.js';
import { EffectDecisionAnswerDto, EffectPageAnswerDto, ResolvedAnswerDto } from './dto/followups-responses.dto.js';

/**
 * Effects of follow-up steps (seed 002 "Efeitos"): listing the sends that wait for a decision
 * (any key with agents:read), deciding one and reconciling an uncertain one. Deciding
 * and reconciling need a key created by an admin (403 `forbidden` otherwise); the key and its
 * creator travel with the call so the approval can be re-checked before the send.
 */
@ApiTags('followups')
@Controller('ai/followups/effects')
export class FollowupEffectsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get()
  @RequireKey({ scopes: [Scope.AgentsRead] })
  @ApiOperation({
    summary: 'Effects of one status, oldest first: `{data: {data: [...], next_cursor}}` (limit 1–100, default 30)',
    description:
      'Today `status=awaiting_decision`: the sends of flows with `require_approval` that wait for a person, each with its flow and contact. Any key with agents:read lists them; deciding one needs a key created by an admin. 422 `invalid_cursor` when the cursor is bad, stale or was issued for other filters.',
  })
  @ApiErrorResponses(400, 404, 422, 503)
  @ApiOkResponse({ type: EffectPageAnswerDto })
  list(@CurrentCaller() caller: Caller, @Query() query: ListEffectsQuery) {
    const { customer_id: _c, ...filters } = query;
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.EffectList, filters);
  }

  @Post(':id/decision')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.AgentsWrite], adminCreatedKey: true })
  @ApiOperation({
    summary: 'Approve or reject a send awaiting a decision: `{data: {ok, id, status}}`',
    description: '409 `conflict` when the send is not awaiting a decision. The approval loses its effect if, before the send, the key is revoked or its creator leaves (the send becomes `rejected`, reason `approval_revoked`).',
  })
  @ApiErrorResponses(400, 401, 403, 404, 409, 503)
  @ApiOkResponse({ type: EffectDecisionAnswerDto })
  decide(@CurrentCaller() caller: Caller, @Param() params: EffectIdParams, @Body() body: EffectDecisionDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.EffectDecide, {
      effect_id: params.id,
      approve: body.approve,
      api_key_id: caller.apiKeyId,
      member_id: caller.createdBy.memberId,
    });
  }

  @Post(':id/resolve')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.AgentsWrite], adminCreatedKey: true })
  @ApiOperation({ summary: 'Reconcile an uncertain send (sent | rejected | cancelled, with a 10–2,000 character note): `{data: {resolved: true}}`', description: '409 `not_ambiguous` when the send is not uncertain.' })
  @ApiErrorResponses(400, 401, 403, 404, 409, 503)
  @ApiOkResponse({ type: ResolvedAnswerDto })
  resolve(@CurrentCaller() caller: Caller, @Param() params: EffectIdParams, @Body() body: EffectResolveDto) {
    return this.forwarder.forward(caller, 'followups', FollowupsRpc.EffectResolve, {
      effect_id: params.id,
      outcome: body.outcome,
      note: body.note,
      ...(body.wamid ? { wamid: body.wamid } : {}),
      api_key_id: caller.apiKeyId,
      member_id: caller.createdBy.memberId,
    });
  }
}
