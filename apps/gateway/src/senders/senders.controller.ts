import { Body, Controller, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OutboxAccountRpc, OutboxRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { CreateAccountSenderDto, CreateSenderDto, ListSendersQuery, SenderDto, SenderIdParams, SenderListDto, SenderRemovedDto, UpdateSenderDto } from './dto/sender.dto.js';

/**
 * Sender administration (seed 004 "Outbound WhatsApp outbox & dispatcher", seed 003 §4.6): the organization's WhatsApp business numbers,
 * email mailboxes and LinkedIn accounts, forwarded to the outbox-dispatcher, which keeps the
 * credentials encrypted next to the wire. Admin scope.
 */
@ApiTags('senders')
@Controller('senders')
@RequireKey({ scopes: [Scope.Admin] })
export class SendersController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Post()
  @ApiOperation({
    summary: 'Add a WhatsApp business number (the first of a channel becomes the default)',
    description: 'The `access_token` must read `phone_number_id` at Graph, else 422 `sender_unverified` and nothing is stored; only then is a number already registered answered 409.',
  })
  @ApiCreatedResponse({ type: SenderDto })
  @ApiErrorResponses(400, 409, 422, 503)
  create(@CurrentCaller() caller: Caller, @Body() body: CreateSenderDto) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxRpc.SenderCreate, body);
  }

  @Post('accounts')
  @ApiOperation({
    summary: 'Add an email mailbox (Nylas grant) or a LinkedIn account (Unipile) to send outreach from',
    description: 'The `api_key` must read `account_id` at the provider (the grant, the account), else 422 `sender_unverified` and nothing is stored.',
  })
  @ApiCreatedResponse({ type: SenderDto })
  @ApiErrorResponses(400, 409, 422, 503)
  createAccount(@CurrentCaller() caller: Caller, @Body() body: CreateAccountSenderDto) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxAccountRpc.Create, body);
  }

  @Get()
  @ApiOperation({ summary: 'List senders' })
  @ApiOkResponse({ type: SenderListDto })
  @ApiErrorResponses(400, 503)
  list(@CurrentCaller() caller: Caller, @Query() query: ListSendersQuery) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxRpc.SenderList, query);
  }

  @Get(':sender_id')
  @ApiOperation({ summary: 'Get a sender' })
  @ApiOkResponse({ type: SenderDto })
  @ApiErrorResponses(400, 404, 503)
  get(@CurrentCaller() caller: Caller, @Param() params: SenderIdParams) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxRpc.SenderGet, params);
  }

  @Patch(':sender_id')
  @ApiOperation({ summary: 'Update a sender (token replaced, never returned; a new token must read the number at Graph, else 422 sender_unverified; status change publishes outbox.sender.connected/disconnected)' })
  @ApiOkResponse({ type: SenderDto })
  @ApiErrorResponses(400, 404, 422, 503)
  update(@CurrentCaller() caller: Caller, @Param() params: SenderIdParams, @Body() body: UpdateSenderDto) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxRpc.SenderUpdate, { ...body, ...params });
  }

  @Delete(':sender_id')
  @ApiOperation({ summary: 'Remove a sender; its queued messages fail as sender_unavailable' })
  @ApiOkResponse({ type: SenderRemovedDto })
  @ApiErrorResponses(400, 404, 503)
  remove(@CurrentCaller() caller: Caller, @Param() params: SenderIdParams) {
    return this.forwarder.forward(caller, 'outbox-dispatcher', OutboxRpc.SenderRemove, params);
  }
}
