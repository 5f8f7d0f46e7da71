import { Module } from '@nestjs/common';
import { OutreachController } from './outreach.controller.js';

/** `/agentic/outreach/*`: forwarding routes to the outreach service (seed 003). */
@Module({ controllers: [OutreachController] })
export class OutreachRoutesModule {}
