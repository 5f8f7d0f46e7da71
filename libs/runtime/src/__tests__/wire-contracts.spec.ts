import 'reflect-metadata';
import { BUS_HANDLER, OnBusMessage } from '@touchpoint/bus';
import type { ServiceConfig } from '@touchpoint/config';
import { type BusMessage, type ContactOptedOutData, type ContactView, MessagingCommands, MessagingEvents, MessagingRpc, type OutgoingMessage } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { OnRpc, RpcClient } from '../rpc.js';

/**
 * libs/contracts `BusContract` and `RpcContract` (wire.ts): a message, a handler or a call whose
 * payload or answer is not the one its name stands for does not compile. Every `@ts-expect-error`
 * below is a line `npm run typecheck` must reject (an unused directive is itself an error), and the
 * runtime assertions show that the typed paths hand the payload on unchanged.
 */
describe('wire contracts', () => {
  const org = '00000000-0000-4000-8000-000000000001';
  const optedOut: ContactOptedOutData = { contact_id: 'c-1', channel: 'email', message_id: null };

  describe('OutgoingMessage (tx.publish)', () => {
    it("takes a message whose data is its type's payload, and refuses another payload", async () => {
      const published: unknown[] = [];
      const tx = { publish: async (m: unknown) => void published.push(m) } as Pick<Tx, 'publish'>;
      const right: OutgoingMessage = { event_id: 'opt:1', type: MessagingEvents.ContactOptedOut, organization_id: org, data: optedOut };
      // @ts-expect-error a contact.opted_out event needs ContactOptedOutData (channel, message_id), not a tag change
      const wrong: OutgoingMessage = { event_id: 'opt:2', type: MessagingEvents.ContactOptedOut, organization_id: org, data: { contact_id: 'c-1', tags: [], all_tags: [] } };
      await tx.publish(right);
      // @ts-expect-error the data of messaging.send is MessagingSendData
      await tx.publish({ event_id: 'send:1', type: MessagingCommands.Send, organization_id: org, data: optedOut });
      expect(published).toEqual([right, { event_id: 'send:1', type: 'messaging.send', organization_id: org, data: optedOut }]);
      expect(wrong.type).toBe('messaging.contact.opted_out');
    });
  });

  describe('OnBusMessage', () => {
    it("registers a handler that takes its message's payload; a handler of another payload does not compile", () => {
      class Consumer {
        @OnBusMessage(MessagingEvents.ContactOptedOut) async right(message: BusMessage<ContactOptedOutData>, tx: Tx): Promise<void> {
          void message;
          void tx;
        }
        // @ts-expect-error contact.opted_out does not carry a ContactView
        @OnBusMessage(MessagingEvents.ContactOptedOut) async wrong(message: BusMessage<ContactView>, tx: Tx): Promise<void> {
          void message;
          void tx;
        }
        // @ts-expect-error a name outside BusContract is a private wake-up, whose handler reads no message
        @OnBusMessage('messaging.contact.opted-out') async typo(message: BusMessage<ContactOptedOutData>, tx: Tx): Promise<void> {
          void message;
          void tx;
        }
      }
      expect(Reflect.getMetadata(BUS_HANDLER, Consumer.prototype.right)).toBe('messaging.contact.opted_out');
      expect(Reflect.getMetadata(BUS_HANDLER, Consumer.prototype.typo)).toBe('messaging.contact.opted-out');
    });
  });

  describe('OnRpc', () => {
    it('marks a handler with the Nest pattern; a wrong request or answer does not compile', () => {
      const contact = { id: 'c-1' } as ContactView;
      class Controller {
        @OnRpc(MessagingRpc.ContactGet) right(data: { organization_id: string; contact_id: string }): ContactView {
          void data;
          return contact;
        }
        // @ts-expect-error the request of messaging.contacts.get has no `tags`
        @OnRpc(MessagingRpc.ContactGet) wrongRequest(data: { organization_id: string; tags: string[] }): ContactView {
          void data;
          return contact;
        }
        // @ts-expect-error messaging.contacts.get answers a ContactView, not a page
        @OnRpc(MessagingRpc.ContactGet) wrongAnswer(data: { organization_id: string; contact_id: string }): { items: ContactView[] } {
          void data;
          return { items: [contact] };
        }
      }
      expect(Reflect.getMetadata('microservices:pattern', Controller.prototype.right)).toEqual([MessagingRpc.ContactGet]);
    });
  });

  describe(RpcClient.name, () => {
    it("sends the pattern's request as given and resolves with its answer; a wrong request does not compile", async () => {
      const sut = new RpcClient({ RPC_TIMEOUT_MS: 1000 } as ServiceConfig, { warn: () => undefined } as Partial<Logger> as Logger);
      const sent: unknown[] = [];
      sut.callUnchecked = async <T>(service: string, pattern: string, data: unknown): Promise<T> => {
        sent.push({ service, pattern, data });
        return { id: 'c-1' } as T;
      };
      const answer: ContactView = await sut.call('messaging', MessagingRpc.ContactGet, { organization_id: org, contact_id: 'c-1' });
      // @ts-expect-error messaging.contacts.get needs contact_id
      await sut.call('messaging', MessagingRpc.ContactGet, { organization_id: org, id: 'c-1' });
      expect(answer.id).toBe('c-1');
      expect(sent).toEqual([
        { service: 'messaging', pattern: 'messaging.contacts.get', data: { organization_id: org, contact_id: 'c-1' } },
        { service: 'messaging', pattern: 'messaging.contacts.get', data: { organization_id: org, id: 'c-1' } },
      ]);
    });
  });
});
