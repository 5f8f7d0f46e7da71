import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OutboxRpc, Scope } from '@touchpoint/contracts';
import { actorOf } from '../auth/actor.js';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { AmbiguousEntryParams, AmbiguousSendPageDto, AmbiguousSendResolvedDto, ListAmbiguousSendsQuery, ResolveAmbiguousSendDto } from './dto/ambiguous-send.dto.js';

/**
 * Sends whose outcome the dispatcher does not know (a timeout or a dropped connection: seed 004
 * "Ambiguity is resolved by correlation"). They are never retried; a provider status settles them,
 * or a person does here, as the admin CLI's `outbox:ambiguous:*` does. Admin scope; forwarded to
 * the outbox-dispatcher.
 */
@ApiTags('outbox')
@Controller('outbox/ambiguous')
@RequireKey({ scopes: [Scope.Admin] })
export class AmbiguousSendsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get()
  @ApiOperation({ summary: "List the organization's ambiguous sends, oldest first (cursor)" })
  @ApiOkResponse({ type: AmbiguousSendPageDto })
  @ApiErrorResponses(400, 422, 503)
  list(@CurrentCaller() caller: Caller, @Query() query: ListAmbiguousSendsQuery) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxRpc.ListAmbiguous, { limit: query.limit ?? 50, cursor: query.cursor });
  }

  @Post(':entry_id/resolve')
  @HttpCode(200)
  @ApiOperation({ summary: 'Settle an ambiguous send: accepted (it arrived: the message becomes sent) or rejected (failed); publishes outbox.entry.resolved' })
  @ApiOkResponse({ type: AmbiguousSendResolvedDto })
  @ApiErrorResponses(400, 404, 409, 503)
  resolve(@CurrentCaller() caller: Caller, @Param() params: AmbiguousEntryParams, @Body() body: ResolveAmbiguousSendDto) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxRpc.ResolveAmbiguousOrFail, { entry_id: params.entry_id, status: body.status, note: body.note, actor: actorOf(caller) });
  }
}
