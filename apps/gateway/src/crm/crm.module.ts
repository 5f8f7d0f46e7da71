import { Module } from '@nestjs/common';
import { CrmEventsController, CrmWebhookController } from './crm-events.controller.js';

/** The CRM events ingress (`POST /crm/events` with a key, `POST /webhooks/crm` signed), handed to messaging by RPC. */
@Module({ controllers: [CrmEventsController, CrmWebhookController] })
export class CrmRoutesModule {}
