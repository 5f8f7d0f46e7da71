import { Module } from '@nestjs/common';
import { OutreachController } from './outreach.controller.js';
import { ProspectCapController } from './prospect-cap.controller.js';

/** `/agentic/outreach/*`: forwarding routes to the outreach service and, for the prospect cap, to the outbox-dispatcher (seed 003). */
@Module({ controllers: [OutreachController, ProspectCapController] })
export class OutreachRoutesModule {}
