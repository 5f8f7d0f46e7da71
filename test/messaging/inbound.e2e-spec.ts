import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { MessagingEvents, OutboxCommands, type WhatsAppInboundBatch } from '@touchpoint/contracts';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { InboundService } from '../../apps/messaging/src/inbound/inbound.service.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { SendService } from '../../apps/messaging/src/sending/send.service.js';
import { type InboundPipeline, inboundPipeline } from './inbound-pipeline.js';
import { inboundText, newWamid, outboxEvents, PHONE_NUMBER_ID, registerSender, setLimits } from './helpers.js';

describe(InboundService.name, () => {
  let world: TestWorld;
  let messaging: NestFastifyApplication;
  let sut: InboundPipeline;
  const m = () => world.schema('messaging');

  beforeAll(async () => {
    world = await createTestWorld('inbound');
    await world.start(AbuseModule.forRoot(world.config(AbuseConfig, { ABUSE_EXPIRY_INTERVAL_MS: '0' })));
    messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', RPC_TIMEOUT_MS: '1000' })));
    sut = inboundPipeline(messaging);
  });
  afterAll(() => world.close());

  /** A fresh organization owning its own business number, with roomy rate limits. */
  async function organization(limits: { per_instance?: number } = {}): Promise<{ org: string; pnid: string }> {
    const org = `org-${randomUUID()}`;
    const pnid = `pn-${randomUUID()}`;
    await registerSender(world, org, pnid);
    await setLimits(world, org, limits);
    return { org, pnid };
  }

  let clockSeconds = 1_760_000_000;
  const nextTs = () => (clockSeconds += 3);

  describe('whatsapp', () => {
    it('stores the documented text webhook once, with contact, conversation, instance, read receipt and event', async () => {
      const fixture = JSON.parse(readFileSync('/work/shared/fixtures/meta/webhook-message-text.json', 'utf8'));
      const value = fixture.entry[0].changes[0].value;
      const org = `org-${randomUUID()}`;
      await registerSender(world, org, PHONE_NUMBER_ID);
      await setLimits(world, org, {});
      const batch: WhatsAppInboundBatch = { phone_number_id: value.metadata.phone_number_id, display_phone_number: value.metadata.display_phone_number, contacts: value.contacts, messages: value.messages };

      expect(await sut.whatsapp(batch)).toEqual({ stored: 1, duplicates: 0, denied: 0, ignored: 0 });
      const wamid = value.messages[0].id;
      const [row] = await world.sql<{ body: string; status: string; direction: string; contact_id: string; instance_id: string }>(`SELECT body, status, direction, contact_id, instance_id FROM "${m()}".messages WHERE external_id = $1`, [wamid]);
      expect(row).toMatchObject({ body: 'Does it come in another color?', status: 'received', direction: 'inbound' });
      const [contact] = await world.sql<{ phone: string; name: string; organization_id: string }>(`SELECT phone, name, organization_id FROM "${m()}".contacts WHERE id = $1`, [row.contact_id]);
      expect(contact).toEqual({ phone: '+5511987654321', name: 'Ana Example', organization_id: org });
      const [instance] = await world.sql<{ message_count: number; status: string }>(`SELECT message_count, status FROM "${m()}".conversation_instances WHERE id = $1`, [row.instance_id]);
      expect(instance).toEqual({ message_count: 1, status: 'active' });

      const received = (await outboxEvents<{ external_id: string; text: string; opt_out: boolean; auto_reply: boolean }>(world, 'messaging', MessagingEvents.MessageReceived)).filter((e) => e.payload.data.external_id === wamid);
      expect(received).toHaveLength(1);
      expect(received[0].payload.data).toMatchObject({ text: 'Does it come in another color?', opt_out: false, auto_reply: false });
      const receipts = (await outboxEvents<{ idempotency_key: string; payload: unknown; to: string }>(world, 'messaging', OutboxCommands.Enqueue)).filter((e) => e.payload.data.idempotency_key === `read:${wamid}`);
      expect(receipts).toHaveLength(1);
      expect(receipts[0].payload.data).toMatchObject({ to: '5511987654321', payload: { type: 'read_receipt', message_id: wamid } });
      // The event names the number it arrived on, as the receipt does (a follow-up from "the last conversation" answers from it).
      expect((received[0].payload.data as { sender_id?: string }).sender_id).toEqual(expect.any(String));
      expect((received[0].payload.data as { sender_id?: string }).sender_id).toBe((receipts[0].payload.data as { sender_id?: string }).sender_id);

      // Meta redelivers the same webhook: nothing new.
      expect(await sut.whatsapp(batch)).toEqual({ stored: 0, duplicates: 1, denied: 0, ignored: 0 });
    });

    it('stores one message and one event when the same wamid is posted twice at once', async () => {
      const { org, pnid } = await organization();
      const wamid = newWamid();
      const batch = inboundText(wamid, '5511911112222', 'hello there', nextTs(), pnid);
      const results = await Promise.all([sut.whatsapp(batch), sut.whatsapp(batch), sut.whatsapp(batch)]);
      expect(results.reduce((n, r) => n + r.stored, 0)).toBe(1);
      expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(2);
      const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${m()}".messages WHERE external_id = $1`, [wamid]);
      expect(n).toBe(1);
      const events = (await outboxEvents<{ external_id: string }>(world, 'messaging', MessagingEvents.MessageReceived)).filter((e) => e.payload.data.external_id === wamid);
      expect(events).toHaveLength(1);
      expect(events[0].payload.organization_id).toBe(org);
    });

    it('lands a reply from 551187654321 in the conversation of 5511987654321 (Brazilian ninth digit)', async () => {
      const { org, pnid } = await organization();
      const sent = await messaging.get(SendService).send({
        organization_id: org,
        idempotency_key: `test:${randomUUID()}`,
        channel: 'whatsapp',
        to: '5511987654321',
        sender_type: 'system',
        requester: 'test',
        text: 'Your order shipped',
      });
      const wamid = newWamid();
      expect((await sut.whatsapp(inboundText(wamid, '551187654321', 'thanks!', nextTs(), pnid))).stored).toBe(1);
      const [reply] = await world.sql<{ conversation_id: string; contact_id: string }>(`SELECT conversation_id, contact_id FROM "${m()}".messages WHERE external_id = $1`, [wamid]);
      expect(reply).toEqual({ conversation_id: sent.conversation_id, contact_id: sent.contact_id });
      const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${m()}".contacts WHERE organization_id = $1`, [org]);
      expect(n).toBe(1);
    });

    it('rolls over exactly once when 20 inbound messages arrive together at the cap', async () => {
      const cap = 5;
      const { org, pnid } = await organization({ per_instance: cap });
      const from = '5511933334444';
      for (let i = 0; i < cap; i++) expect((await sut.whatsapp(inboundText(newWamid(), from, `question number ${i} about the order`, nextTs(), pnid))).stored).toBe(1);
      const [first] = await world.sql<{ id: string; message_count: number; conversation_id: string }>(`SELECT i.id, i.message_count, i.conversation_id FROM "${m()}".conversation_instances i WHERE i.organization_id = $1`, [org]);
      expect(first.message_count).toBe(cap);

      const words = ['apple', 'banana', 'cherry', 'delivery', 'invoice', 'payment', 'receipt', 'shipping', 'tracking', 'warranty'];
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => sut.whatsapp(inboundText(newWamid(), from, `${words[i % 10]} question ${i} please`, nextTs(), pnid))));
      expect(results.reduce((n, r) => n + r.stored, 0)).toBe(20);

      const instances = await world.sql<{ instance_number: number; status: string; auto_closed_reason: string | null; message_count: number }>(
        `SELECT instance_number, status, auto_closed_reason, message_count FROM "${m()}".conversation_instances WHERE conversation_id = $1 ORDER BY instance_number`,
        [first.conversation_id],
      );
      expect(instances.map((i) => [i.instance_number, i.status, i.auto_closed_reason])).toEqual([
        [1, 'closed', 'message_limit'],
        [2, 'active', null],
      ]);
      expect(instances[0].message_count + instances[1].message_count).toBe(cap + 20);
      expect(instances[0].message_count).toBe(cap);
    });

    it('counts outbound messages toward the cap: a heavily-notified contact rolls over on the next inbound', async () => {
      const cap = 4;
      const { org, pnid } = await organization({ per_instance: cap });
      const sends = messaging.get(SendService);
      let conversationId = '';
      for (let i = 0; i < cap; i++) {
        const r = await sends.send({ organization_id: org, idempotency_key: `n:${randomUUID()}`, channel: 'whatsapp', to: '+55 11 95555-6666', sender_type: 'notification', requester: 'test', text: `notice ${i}` });
        conversationId = r.conversation_id;
      }
      const [before] = await world.sql<{ message_count: number }>(`SELECT message_count FROM "${m()}".conversation_instances WHERE conversation_id = $1 AND status = 'active'`, [conversationId]);
      expect(before.message_count).toBe(cap);

      const wamid = newWamid();
      expect((await sut.whatsapp(inboundText(wamid, '5511955556666', 'ok, got them', nextTs(), pnid))).stored).toBe(1);
      const instances = await world.sql<{ instance_number: number; status: string; auto_closed_reason: string | null; message_count: number }>(
        `SELECT instance_number, status, auto_closed_reason, message_count FROM "${m()}".conversation_instances WHERE conversation_id = $1 ORDER BY instance_number`,
        [conversationId],
      );
      expect(instances).toEqual([
        { instance_number: 1, status: 'closed', auto_closed_reason: 'message_limit', message_count: cap },
        { instance_number: 2, status: 'active', auto_closed_reason: null, message_count: 1 },
      ]);
    });

    it('flags an opt-out, marks the contact and asks for suppression', async () => {
      const { pnid } = await organization();
      const wamid = newWamid();
      await sut.whatsapp(inboundText(wamid, '5511977778888', 'PARE!', nextTs(), pnid));
      const [row] = await world.sql<{ opt_out: boolean; contact_id: string }>(`SELECT opt_out, contact_id FROM "${m()}".messages WHERE external_id = $1`, [wamid]);
      expect(row.opt_out).toBe(true);
      const [contact] = await world.sql<{ opted_out_at: Date | null }>(`SELECT opted_out_at FROM "${m()}".contacts WHERE id = $1`, [row.contact_id]);
      expect(contact.opted_out_at).not.toBeNull();
      const suppressions = (await outboxEvents<{ contact_id: string; value: string; channel: string }>(world, 'messaging', MessagingEvents.SuppressionRequested)).filter((e) => e.payload.data.contact_id === row.contact_id);
      expect(suppressions.map((s) => [s.payload.data.channel, s.payload.data.value])).toEqual([['whatsapp', '+5511977778888']]);
    });

    it('answers service_unavailable (so Meta redelivers) when the owner of the number cannot be learned', async () => {
      // Not in the read model, and the dispatcher's lookup does not answer in this world.
      await expect(sut.whatsapp(inboundText(newWamid(), '5511900001111', 'hi', nextTs(), `pn-unknown-${randomUUID()}`))).rejects.toMatchObject({ code: 'service_unavailable' });
    });
  });
});
