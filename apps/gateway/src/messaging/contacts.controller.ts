import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { MessagingRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { ContactIdParams, ContactPreferenceParams, ContactTagParams, CreateContactDto, ListContactsQuery, PreferenceDto, TagsDto, UpdateContactDto } from './dto/messaging.dto.js';
import { ContactDto, ContactPageDto, PreferenceListDto } from './dto/messaging-responses.dto.js';

/** Contacts of the caller's organization, forwarded to messaging. */
@ApiTags('contacts')
@Controller('contacts')
export class ContactsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Post()
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Create a contact (409 with the existing id when the phone or email is taken)' })
  @ApiErrorResponses(400, 409, 503)
  @ApiCreatedResponse({ type: ContactDto })
  create(@CurrentCaller() caller: Caller, @Body() body: CreateContactDto) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ContactCreate, body);
  }

  @Get()
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'List contacts, newest first (cursor)' })
  @ApiErrorResponses(400, 422, 503)
  @ApiOkResponse({ type: ContactPageDto })
  list(@CurrentCaller() caller: Caller, @Query() query: ListContactsQuery) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ContactList, query);
  }

  @Get(':contact_id')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'Get a contact' })
  @ApiErrorResponses(404, 503)
  @ApiOkResponse({ type: ContactDto })
  get(@CurrentCaller() caller: Caller, @Param() params: ContactIdParams) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ContactGet, params);
  }

  @Patch(':contact_id')
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Update a contact' })
  @ApiErrorResponses(400, 404, 409, 503)
  @ApiOkResponse({ type: ContactDto })
  update(@CurrentCaller() caller: Caller, @Param() params: ContactIdParams, @Body() body: UpdateContactDto) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ContactUpdate, { ...body, ...params });
  }

  @Post(':contact_id/tags')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Add tags (messaging.contact.tagged)' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: ContactDto })
  tag(@CurrentCaller() caller: Caller, @Param() params: ContactIdParams, @Body() body: TagsDto) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ContactTag, { ...params, tags: body.tags });
  }

  @Delete(':contact_id/tags/:tag')
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Remove a tag (messaging.contact.untagged)' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: ContactDto })
  untag(@CurrentCaller() caller: Caller, @Param() params: ContactTagParams) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ContactUntag, { contact_id: params.contact_id, tags: [params.tag] });
  }

  @Post(':contact_id/erase')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Erase a contact: personal fields and message bodies wiped, sends still queued to it cancelled (messaging.contact.erased)' })
  @ApiErrorResponses(404, 503)
  @ApiOkResponse({ type: ContactDto })
  erase(@CurrentCaller() caller: Caller, @Param() params: ContactIdParams) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.ContactErase, params);
  }

  @Get(':contact_id/notification-preferences')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: "A contact's notification preferences per channel" })
  @ApiErrorResponses(404, 503)
  @ApiOkResponse({ type: PreferenceListDto })
  preferences(@CurrentCaller() caller: Caller, @Param() params: ContactIdParams) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.PreferenceList, params);
  }

  @Put(':contact_id/notification-preferences/:channel')
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Turn a notification channel on or off for a contact' })
  @ApiErrorResponses(400, 404, 503)
  @ApiOkResponse({ type: PreferenceListDto })
  setPreference(@CurrentCaller() caller: Caller, @Param() params: ContactPreferenceParams, @Body() body: PreferenceDto) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.PreferenceSet, { ...params, enabled: body.enabled });
  }
}
