import { Module } from '@nestjs/common';
import { SendersController } from './senders.controller.js';

/** `/senders`: sender administration, forwarded to the outbox-dispatcher. */
@Module({ controllers: [SendersController] })
export class SendersRoutesModule {}
