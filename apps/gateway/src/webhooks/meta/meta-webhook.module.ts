import { Module } from '@nestjs/common';
import { MetaWebhookController } from './meta-webhook.controller.js';
import { MetaWebhookService } from './meta-webhook.service.js';

/** `GET|POST /webhooks/meta`: Meta's signed webhooks, handed to their owners by RPC. */
@Module({ controllers: [MetaWebhookController], providers: [MetaWebhookService] })
export class MetaWebhookModule {}
