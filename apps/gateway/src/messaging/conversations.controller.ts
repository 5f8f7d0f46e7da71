import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { MessagingRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { ConversationIdParams, ListConversationsQuery, OperatorSendDto, PageQuery } from './dto/messaging.dto.js';
import { ConversationDto, ConversationPageDto, MessagePageDto, SendResultDto } from './dto/messaging-responses.dto.js';

/** The operator's inbox, forwarded to messaging. */
@ApiTags('conversations')
@Controller('conversations')
export class ConversationsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Get()
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'List conversations, most recent activity first (filters, cursor)' })
  @ApiErrorResponses(400, 422, 503)
  @ApiOkResponse({ type: ConversationPageDto })
  list(@CurrentCaller() caller: Caller, @Query() query: ListConversationsQuery) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ConversationList, query);
  }

  @Get(':conversation_id')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'Get a conversation with its active instance' })
  @ApiErrorResponses(404, 503)
  @ApiOkResponse({ type: ConversationDto })
  get(@CurrentCaller() caller: Caller, @Param() params: ConversationIdParams) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ConversationGet, params);
  }

  @Get(':conversation_id/messages')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: "A conversation's messages, newest first (cursor)" })
  @ApiErrorResponses(404, 422, 503)
  @ApiOkResponse({ type: MessagePageDto })
  messages(@CurrentCaller() caller: Caller, @Param() params: ConversationIdParams, @Query() query: PageQuery) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ConversationMessages, { ...query, ...params });
  }

  @Post(':conversation_id/messages')
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Send a message as an operator (handoff: automation stops for the contact); 409 `idempotency_conflict` when the key was used for another message' })
  @ApiErrorResponses(400, 404, 409, 415, 503)
  @ApiCreatedResponse({ type: SendResultDto })
  send(@CurrentCaller() caller: Caller, @Param() params: ConversationIdParams, @Body() body: OperatorSendDto) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ConversationSend, { ...body, ...params, operator_id: caller.createdBy.memberId });
  }

  @Post(':conversation_id/resolve')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Resolve a conversation (messaging.conversation.resolved)' })
  @ApiErrorResponses(404, 503)
  @ApiOkResponse({ type: ConversationDto })
  resolve(@CurrentCaller() caller: Caller, @Param() params: ConversationIdParams) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ConversationResolve, { ...params, resolved_by: caller.createdBy.memberId });
  }
}
