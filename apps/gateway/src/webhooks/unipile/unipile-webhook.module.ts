import { Module } from '@nestjs/common';
import { UnipileWebhookController } from './unipile-webhook.controller.js';
import { UnipileWebhookService } from './unipile-webhook.service.js';

/** `POST /webhooks/unipile`: Unipile deliveries with the shared secret, handed to messaging by RPC. */
@Module({ controllers: [UnipileWebhookController], providers: [UnipileWebhookService] })
export class UnipileWebhookModule {}
