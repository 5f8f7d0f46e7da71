import { Body, Controller, Get, Param, Post, Put, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { MessagingRpc, Scope } from '@touchpoint/contracts';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { CreateNotificationDto, ListNotificationsQuery, NotificationIdParams, NotificationTemplateBodyDto, TemplateKeyParams } from './dto/messaging.dto.js';
import { NotificationDto, NotificationPageDto, NotificationTemplateDto, NotificationTemplateListDto } from './dto/messaging-responses.dto.js';

/** Notifications and their templates (seed 004 "Scenario 1"), forwarded to messaging. */
@ApiTags('notifications')
@Controller()
export class NotificationsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Post('notifications')
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Create a notification: one delivery per channel, pending until the dispatcher reports. A retry with the same idempotency_key and request answers the same notification; another request with that key answers 409 idempotency_conflict' })
  @ApiErrorResponses(400, 404, 409, 503)
  @ApiCreatedResponse({ type: NotificationDto })
  create(@CurrentCaller() caller: Caller, @Body() body: CreateNotificationDto) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.NotificationCreate, body);
  }

  @Get('notifications')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'List notifications, newest first (cursor)' })
  @ApiErrorResponses(400, 422, 503)
  @ApiOkResponse({ type: NotificationPageDto })
  list(@CurrentCaller() caller: Caller, @Query() query: ListNotificationsQuery) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.NotificationList, query);
  }

  @Get('notifications/:notification_id')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'Get a notification with its deliveries' })
  @ApiErrorResponses(404, 503)
  @ApiOkResponse({ type: NotificationDto })
  get(@CurrentCaller() caller: Caller, @Param() params: NotificationIdParams) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.NotificationGet, params);
  }

  @Get('notification-templates')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'List notification templates' })
  @ApiErrorResponses(503)
  @ApiOkResponse({ type: NotificationTemplateListDto })
  templates(@CurrentCaller() caller: Caller) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.TemplateList, {});
  }

  @Put('notification-templates/:key')
  @RequireKey({ scopes: [Scope.MessagingWrite] })
  @ApiOperation({ summary: 'Create or replace a notification template' })
  @ApiErrorResponses(400, 503)
  @ApiOkResponse({ type: NotificationTemplateDto })
  putTemplate(@CurrentCaller() caller: Caller, @Param() params: TemplateKeyParams, @Body() body: NotificationTemplateBodyDto) {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.TemplateCreate, { ...body, key: params.key });
  }
}
