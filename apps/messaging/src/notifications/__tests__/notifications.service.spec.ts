import { randomUUID } from 'node:crypto';
import { FakeLogger, FakeTx, fakeOf, fakeUnitOfWork, HOUR } from '@touchpoint/testing';
import { MessagingEvents, type MessagingSendData, type NotificationChannel, type NotificationCreateData } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import type { UnitOfWork } from '@touchpoint/runtime';
import { FixedClock } from '@touchpoint/time';
import type { ContactRow } from '../../contacts/contacts.repository.js';
import type { ContactsService } from '../../contacts/contacts.service.js';
import type { MessagesRepository } from '../../messages/messages.repository.js';
import type { SendService } from '../../sending/send.service.js';
import type { StreamRepository } from '../../stream/stream.repository.js';
import type { DeliveryRow, NotificationRow, NotificationsRepository, TemplateRow } from '../notifications.repository.js';
import { NotificationsService } from '../notifications.service.js';

const ORG = 'org-1';
const CONTACT = '6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b';
const NOW = new Date('2026-03-02T12:00:00Z');

/**
 * In-memory notifications, deliveries and templates, the contact and its last inbound message, and
 * the sends the shared send path was asked for.
 */
class Fakes {
  contact = { id: CONTACT, organization_id: ORG, opted_out_at: null, erased_at: null } as unknown as ContactRow;
  /** The contact's last inbound WhatsApp message (null: never wrote). */
  lastInbound: Date | null = null;
  disabled = new Set<string>();
  templates = new Map<string, TemplateRow>();
  notifications: NotificationRow[] = [];
  deliveryRows: DeliveryRow[] = [];
  sends: MessagingSendData[] = [];
  /** `[message id, notification id]` of every message marked as a notification's. */
  linked: [string, string][] = [];
  appended: string[] = [];

  service(tx: FakeTx, logger: FakeLogger): NotificationsService {
    const repository = fakeOf<NotificationsRepository>(
      {
        findByIdempotencyKey: async (_tx, org, key) => this.notifications.find((n) => n.organization_id === org && n.idempotency_key === key) ?? null,
        findTemplate: async (_tx, _org, key) => this.templates.get(key) ?? null,
        insert: async (_tx, n, now) => {
          const row: NotificationRow = { ...n, id: randomUUID(), conversation_instance_id: null, created_at: now };
          this.notifications.push(row);
          return row;
        },
        disabledChannels: async () => this.disabled,
        insertDelivery: async (_tx, org, notificationId, channel, status, now) => {
          const row: DeliveryRow = { id: `d${this.deliveryRows.length + 1}`, organization_id: org, notification_id: notificationId, channel, status, message_id: null, error_code: null, updated_at: now };
          this.deliveryRows.push(row);
          return row;
        },
        settleDelivery: async (_tx, id, status, errorCode) => {
          const row = this.deliveryRows.find((d) => d.id === id)!;
          Object.assign(row, { status, error_code: errorCode });
          return row;
        },
        setDeliveryMessage: async (_tx, id, messageId) =>
          void Object.assign(
            this.deliveryRows.find((d) => d.id === id)!,
            { message_id: messageId },
          ),
        linkInstance: async (_tx, id, instanceId) =>
          void Object.assign(
            this.notifications.find((n) => n.id === id)!,
            { conversation_instance_id: instanceId },
          ),
        findById: async (_tx, org, id) => this.notifications.find((n) => n.organization_id === org && n.id === id) ?? null,
        deliveries: async (_tx, ids) => this.deliveryRows.filter((d) => ids.includes(d.notification_id)),
      },
      'NotificationsRepository',
    );
    const contacts = fakeOf<ContactsService>({ mustFind: async () => this.contact }, 'ContactsService');
    const sends = fakeOf<SendService>(
      {
        sendInTx: async (_tx, data) => {
          this.sends.push(data);
          return { message: { id: `m${this.sends.length}`, instance_id: 'instance-1', status: 'queued', error_code: null }, created: true } as never;
        },
      },
      'SendService',
    );
    const messages = fakeOf<MessagesRepository>(
      {
        lastInboundAt: async () => this.lastInbound,
        setNotification: async (_tx, messageId, notificationId) => void this.linked.push([messageId, notificationId]),
      },
      'MessagesRepository',
    );
    const stream = fakeOf<StreamRepository>({ append: async (_tx, _org, type) => void this.appended.push(type) }, 'StreamRepository');
    return new NotificationsService(fakeUnitOfWork(tx) as unknown as UnitOfWork, repository, contacts, sends, messages, stream, new FixedClock(NOW), logger as unknown as Logger);
  }
}

describe(NotificationsService.name, () => {
  let fakes: Fakes;
  let tx: FakeTx;
  let logger: FakeLogger;
  let sut: NotificationsService;

  beforeEach(() => {
    fakes = new Fakes();
    // The service runs no SQL itself (its repositories do): any statement on the transaction throws.
    tx = new FakeTx();
    logger = new FakeLogger();
    sut = fakes.service(tx, logger);
    fakes.templates.set('payment_received', { key: 'payment_received', title: 'Payment received', body: 'We got your {{amount}}.', whatsapp_template: { name: 'payment_received', language: 'en_US', parameters: ['amount'] }, updated_at: NOW });
    fakes.templates.set('text_only', { key: 'text_only', title: null, body: 'Your order {{order}} shipped.', whatsapp_template: null, updated_at: NOW });
  });

  const create = (over: Partial<NotificationCreateData> = {}) => sut.create({ organization_id: ORG, contact_id: CONTACT, template_key: 'payment_received', variables: { amount: 'R$ 10', order: '42' }, channels: ['whatsapp'], ...over } as NotificationCreateData);
  const statusOf = async (channel: NotificationChannel, over: Partial<NotificationCreateData> = {}) => (await create(over)).deliveries.find((d) => d.channel === channel);

  describe('create', () => {
    describe('a WhatsApp delivery (the 24-hour window, seed 004 "Scenario 1")', () => {
      it.each([
        ['wrote an hour ago: the text', HOUR, 'text'],
        ['wrote 23 h 55 min ago, inside the last 10 minutes: the template', 24 * HOUR - 5 * 60_000, 'template'],
        ['wrote two days ago: the template', 48 * HOUR, 'template'],
        ['never wrote: the template', null, 'template'],
      ] as const)('sends, when the contact %s', async (_case, agoMs, content) => {
        fakes.lastInbound = agoMs === null ? null : new Date(NOW.getTime() - agoMs);
        expect(await statusOf('whatsapp')).toMatchObject({ status: 'pending', message_id: 'm1' });
        const [send] = fakes.sends;
        if (content === 'text') expect(send).toMatchObject({ text: 'Payment received\n\nWe got your R$ 10.', idempotency_key: 'nd:d1', notification_delivery_id: 'd1' });
        else expect(send).toMatchObject({ template: { name: 'payment_received', language: 'en_US', components: [{ type: 'body', parameters: [{ type: 'text', text: 'R$ 10' }] }] } });
        expect(send!.template === undefined).toBe(content === 'text');
      });

      it('fails whatsapp_template_required at creation, sending nothing, outside the window with no WhatsApp template', async () => {
        fakes.lastInbound = new Date(NOW.getTime() - 25 * HOUR);
        expect(await statusOf('whatsapp', { template_key: 'text_only' })).toMatchObject({ status: 'failed', error_code: 'whatsapp_template_required', message_id: null });
        expect(fakes.sends).toEqual([]);
        expect(logger.events()).toEqual(['messaging.notification_undeliverable']);
      });

      it("still sends the text in the window's last minutes when there is no template (better late than never)", async () => {
        fakes.lastInbound = new Date(NOW.getTime() - 24 * HOUR + 5 * 60_000);
        expect(await statusOf('whatsapp', { template_key: 'text_only' })).toMatchObject({ status: 'pending' });
        expect(fakes.sends).toEqual([expect.objectContaining({ text: 'Your order 42 shipped.' })]);
      });

      it('leaves an opted-out contact to the send path, whatever the window (it refuses with opted_out)', async () => {
        fakes.contact = { ...fakes.contact, opted_out_at: NOW };
        fakes.lastInbound = null;
        await create({ template_key: 'text_only' });
        expect(fakes.sends).toEqual([expect.objectContaining({ text: 'Your order 42 shipped.' })]);
      });

      it('links the message and the conversation instance to the notification', async () => {
        fakes.lastInbound = new Date(NOW.getTime() - HOUR);
        const view = await create();
        expect(view.conversation_instance_id).toBe('instance-1');
        expect(fakes.linked).toEqual([['m1', view.id]]);
      });
    });

    it('delivers in-app at once, skips a channel the contact turned off, and publishes one notification.created', async () => {
      fakes.disabled.add('email');
      const view = await create({ channels: ['in_app', 'email', 'in_app'] });
      expect(view.deliveries.map((d) => [d.channel, d.status])).toEqual([
        ['in_app', 'sent'],
        ['email', 'skipped'],
      ]);
      expect(fakes.sends).toEqual([]);
      expect(tx.published.map((m) => [m.event_id, m.type])).toEqual([[`messaging.notification.created:${view.id}`, MessagingEvents.NotificationCreated]]);
      expect(fakes.appended).toEqual([MessagingEvents.NotificationCreated]);
    });

    it('answers a retry with the same key with the same notification, and a different request with idempotency_conflict', async () => {
      fakes.lastInbound = new Date(NOW.getTime() - HOUR);
      const first = await create({ idempotency_key: 'pay-1' });
      expect((await create({ idempotency_key: 'pay-1', channels: ['whatsapp', 'whatsapp'] })).id).toBe(first.id);
      await expect(create({ idempotency_key: 'pay-1', variables: { amount: 'R$ 99' } })).rejects.toMatchObject({ code: 'idempotency_conflict' });
      expect(fakes.sends).toHaveLength(1);
    });

    it.each([
      ['no channel', 'validation_failed', { channels: [] }],
      ['a missing template variable', 'validation_failed', { variables: {} }],
      ['an unknown template', 'not_found', { template_key: 'nope' }],
      ['a parameter Meta would refuse (a newline), whatever the window,', 'invalid_payload', { variables: { amount: 'R$\n10' } }],
    ] as const)('refuses %s with %s and sends nothing', async (_case, code, over) => {
      fakes.lastInbound = new Date(NOW.getTime() - HOUR);
      await expect(create(over as Partial<NotificationCreateData>)).rejects.toMatchObject({ code });
      expect(fakes.sends).toEqual([]);
    });
  });
});
