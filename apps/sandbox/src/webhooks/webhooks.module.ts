import { Module } from '@nestjs/common';
import { WebhookSender } from './webhook-sender.js';

/** The one webhook client of the sandbox, shared by the Meta, Nylas and Unipile stand-ins (one set of connections). */
@Module({ providers: [WebhookSender], exports: [WebhookSender] })
export class WebhooksModule {}
