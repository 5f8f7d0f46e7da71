import { Body, Controller, Delete, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OutboxAccountRpc, Scope } from '@touchpoint/contracts';
import { actorOf } from '../auth/actor.js';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { AddSuppressionDto, ListSuppressionsQuery, RemoveSuppressionDto, SuppressionAddedDto, SuppressionPageDto, SuppressionRemovedDto } from './dto/suppression.dto.js';

/** Why a row a person adds is on the list (code writes opt_out, unsubscribed, bounced). */
const MANUAL_REASON = 'manual';

/**
 * The organization's do-not-contact list (seed 003 §5 `contact_suppressions` and the console's
 * Operations page): search it, add an address by hand, and remove one with a note. Code never
 * clears a row; a person with the admin scope removes one, for example when someone asks to be
 * contacted again, and the removal is kept with their note. Forwarded to the outbox-dispatcher,
 * which owns the list and checks it right before every send.
 */
@ApiTags('suppressions')
@Controller('suppressions')
@RequireKey({ scopes: [Scope.Admin] })
export class SuppressionsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get()
  @ApiOperation({
    summary: 'Search the do-not-contact list, newest first (cursor) (admin)',
    description: '`q` matches part of the value or of its note, any case. A cursor replayed with another q or channel answers 422 `invalid_cursor`.',
  })
  @ApiOkResponse({ type: SuppressionPageDto })
  @ApiErrorResponses(400, 422, 503)
  list(@CurrentCaller() caller: Caller, @Query() query: ListSuppressionsQuery) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxAccountRpc.SuppressionList, { q: query.q, channel: query.channel, cursor: query.cursor, limit: query.limit ?? 50 });
  }

  @Post()
  @ApiOperation({
    summary: 'Put an address on the do-not-contact list (admin)',
    description:
      'Keyed as the senders key it (an email lower-cased, a phone as digits); its queued sends that have not started are cancelled at once. A value already on the list answers `created: false` and keeps its first note. A value that is no address of its channel answers 400 `invalid_recipient`.',
  })
  @ApiCreatedResponse({ type: SuppressionAddedDto })
  @ApiErrorResponses(400, 422, 503)
  add(@CurrentCaller() caller: Caller, @Body() body: AddSuppressionDto) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxAccountRpc.SuppressionAdd, { channel: body.channel, value: body.value, note: body.note, reason: MANUAL_REASON, actor: actorOf(caller) });
  }

  @Delete()
  @HttpCode(200)
  @ApiOperation({ summary: 'Remove an address from the do-not-contact list, with a note (admin)', description: 'The removal is recorded with the note and the member. Sends cancelled while it was on the list stay cancelled.' })
  @ApiOkResponse({ type: SuppressionRemovedDto })
  @ApiErrorResponses(400, 422, 503)
  remove(@CurrentCaller() caller: Caller, @Body() body: RemoveSuppressionDto) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxAccountRpc.SuppressionRemove, { channel: body.channel, value: body.value, note: body.note, actor: actorOf(caller) });
  }
}
