import { Module } from '@nestjs/common';
import { AmbiguousSendsController } from './ambiguous-sends.controller.js';

/** `/outbox/ambiguous`: triage of sends with an unknown outcome, forwarded to the outbox-dispatcher. */
@Module({ controllers: [AmbiguousSendsController] })
export class OutboxRoutesModule {}
