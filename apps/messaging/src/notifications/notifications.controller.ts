import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { MessagingRpc, type NotificationCreateData, type NotificationTemplateData } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { NotificationsService } from './notifications.service.js';

/** RPC edge of notifications, their templates and preferences. */
@Controller()
export class NotificationsController {
  constructor(private readonly notifications: NotificationsService) {}

  @OnRpc(MessagingRpc.NotificationCreate)
  create(@Payload() data: NotificationCreateData) {
    return this.notifications.create(data);
  }

  @OnRpc(MessagingRpc.NotificationGet)
  get(@Payload() data: { organization_id: string; notification_id: string }) {
    return this.notifications.get(data.organization_id, data.notification_id);
  }

  @OnRpc(MessagingRpc.NotificationList)
  list(@Payload() data: { organization_id: string; contact_id?: string; cursor?: string; limit?: number }) {
    return this.notifications.list(data.organization_id, data);
  }

  @OnRpc(MessagingRpc.TemplateCreate)
  createTemplate(@Payload() data: NotificationTemplateData) {
    return this.notifications.upsertTemplate(data.organization_id, data);
  }

  @OnRpc(MessagingRpc.TemplateList)
  listTemplates(@Payload() data: { organization_id: string }) {
    return this.notifications.listTemplates(data.organization_id);
  }

  @OnRpc(MessagingRpc.PreferenceSet)
  setPreference(@Payload() data: { organization_id: string; contact_id: string; channel: string; enabled: boolean }) {
    return this.notifications.setPreference(data.organization_id, data);
  }

  @OnRpc(MessagingRpc.PreferenceList)
  listPreferences(@Payload() data: { organization_id: string; contact_id: string }) {
    return this.notifications.listPreferences(data.organization_id, data.contact_id);
  }
}
