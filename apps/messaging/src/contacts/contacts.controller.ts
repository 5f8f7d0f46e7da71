import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type ContactCreateData, type ContactKind, type ContactUpdateData, MessagingRpc } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { ContactsService } from './contacts.service.js';

/** RPC edge of contacts (the gateway forwards the REST routes here with the caller's organization). */
@Controller()
export class ContactsController {
  constructor(private readonly contacts: ContactsService) {}

  @OnRpc(MessagingRpc.ContactCreate)
  create(@Payload() data: ContactCreateData) {
    return this.contacts.create(data);
  }

  @OnRpc(MessagingRpc.ContactGet)
  get(@Payload() data: { organization_id: string; contact_id: string }) {
    return this.contacts.get(data.organization_id, data.contact_id);
  }

  @OnRpc(MessagingRpc.ContactUpdate)
  update(@Payload() data: ContactUpdateData) {
    return this.contacts.update(data);
  }

  @OnRpc(MessagingRpc.ContactList)
  list(@Payload() data: { organization_id: string; cursor?: string; limit?: number; tag?: string; kind?: ContactKind }) {
    return this.contacts.list(data.organization_id, data);
  }

  @OnRpc(MessagingRpc.ContactTag)
  tag(@Payload() data: { organization_id: string; contact_id: string; tags: string[] }) {
    return this.contacts.tag(data.organization_id, data.contact_id, data.tags);
  }

  @OnRpc(MessagingRpc.ContactUntag)
  untag(@Payload() data: { organization_id: string; contact_id: string; tags: string[] }) {
    return this.contacts.untag(data.organization_id, data.contact_id, data.tags);
  }

  @OnRpc(MessagingRpc.ContactErase)
  erase(@Payload() data: { organization_id: string; contact_id: string }) {
    return this.contacts.erase(data.organization_id, data.contact_id);
  }
}
