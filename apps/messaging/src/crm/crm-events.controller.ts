import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type CrmEventIngestData, MessagingRpc } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { CrmEventsService } from './crm-events.service.js';

/** RPC edge of the CRM ingress (the gateway forwards `POST /crm/events` and `POST /webhooks/crm` here). */
@Controller()
export class CrmEventsController {
  constructor(private readonly crm: CrmEventsService) {}

  @OnRpc(MessagingRpc.CrmEventIngest)
  ingest(@Payload() data: CrmEventIngestData) {
    return this.crm.ingest(data);
  }
}
