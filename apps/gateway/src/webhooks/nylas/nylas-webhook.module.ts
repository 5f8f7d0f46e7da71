import { Module } from '@nestjs/common';
import { NylasWebhookController } from './nylas-webhook.controller.js';
import { NylasWebhookService } from './nylas-webhook.service.js';

/** `GET|POST /webhooks/nylas`: Nylas's signed notifications, handed to their owners by RPC. */
@Module({ controllers: [NylasWebhookController], providers: [NylasWebhookService] })
export class NylasWebhookModule {}
