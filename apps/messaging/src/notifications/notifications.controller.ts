import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { MessagingRpc, type NotificationCreateData, type NotificationTemplateData } from '@touchpoint/contracts';
import { NotificationsService } from './notifications.service.js';

/** RPC edge of notifications, their templates and preferences. */
@Controller()
export class NotificationsController {
  constructor(private readonly notifications: NotificationsService) {}

  @MessagePattern(MessagingRpc.NotificationCreate)
  create(@Payload() data: NotificationCreateData) {
    return this.notifications.create(data);
  }

  @MessagePattern(MessagingRpc.NotificationGet)
  get(@Payload() data: { organization_id: string; notification_id: string }) {
    return this.notifications.get(data.organization_id, data.notification_id);
  }

  @MessagePattern(MessagingRpc.NotificationList)
  list(@Payload() data: { organization_id: string; contact_id?: string; cursor?: string; limit?: number }) {
    return this.notifications.list(data.organization_id, data);
  }

  @MessagePattern(MessagingRpc.TemplateCreate)
  createTemplate(@Payload() data: NotificationTemplateData) {
    return this.notifications.upsertTemplate(data.organization_id, data);
  }

  @MessagePattern(MessagingRpc.TemplateList)
  listTemplates(@Payload() data: { organization_id: string }) {
    return this.notifications.listTemplates(data.organization_id);
  }

  @MessagePattern(MessagingRpc.PreferenceSet)
  setPreference(@Payload() data: { organization_id: string; contact_id: string; channel: string; enabled: boolean }) {
    return this.notifications.setPreference(data.organization_id, data);
  }

  @MessagePattern(MessagingRpc.PreferenceList)
  listPreferences(@Payload() data: { organization_id: string; contact_id: string }) {
    return this.notifications.listPreferences(data.organization_id, data.contact_id);
  }
}
