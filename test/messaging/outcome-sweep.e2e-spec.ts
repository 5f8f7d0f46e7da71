import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { OutcomeSweepService } from '../../apps/messaging/src/reconciliation/outcome-sweep.service.js';
import { soon, startWireWorld, statusWebhook, type WireWorld } from '../outbox/wire-world.js';

/**
 * Messaging's recovery pass (seed 004 "Dispatch is woken …, drained by cron"): an outcome the
 * dispatcher settled but whose event never moved the message is read back from the dispatcher
 * after the grace and applied; a notification delivery left pending behind a settled message is
 * settled; provider statuses that never matched a message are pruned after their TTL. A lost
 * outcome is staged by putting the rows back as they stood before the outcome's event (what a
 * dead-lettered `outbox.entry.*` leaves); the sends themselves go to the sandbox's Meta.
 */
describe(OutcomeSweepService.name, () => {
  let w: WireWorld;
  let sut: OutcomeSweepService;
  let phoneSeq = 0;
  const m = (table: string) => `"${w.world.schema('messaging')}".${table}`;

  beforeAll(async () => {
    w = await startWireWorld('messaging_outcome_sweep', { OUTBOX_PERSISTENCE_GRACE_MS: '1000' });
    sut = w.messaging.get(OutcomeSweepService);
    // The contacts never wrote (their 24-hour window is closed): the approved WhatsApp template goes.
    const put = await w.http('PUT', '/notification-templates/login_code', { secret: w.key.secret, json: { body: 'Seu código é {{code}}', whatsapp_template: { name: 'login_code', language: 'pt_BR', parameters: ['code'] } } });
    expect(put.status).toBe(200);
  }, 90_000);
  afterAll(() => w.close());

  /** A WhatsApp notification to a new contact, queued at the dispatcher (not drained yet). */
  async function notification(): Promise<{ notificationId: string; messageId: string; waId: string }> {
    const waId = `55929877710${String(++phoneSeq).padStart(2, '0')}`;
    const contact = await w.http('POST', '/contacts', { secret: w.key.secret, json: { name: 'Lia Example', phone: `+${waId}` } });
    expect(contact.status).toBe(201);
    const created = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contact.body.id, template_key: 'login_code', variables: { code: randomUUID().slice(0, 4) }, channels: ['whatsapp'] } });
    expect(created.status).toBe(201);
    const messageId = created.body.deliveries[0].message_id as string;
    await soon(async () => (await w.entriesOf(messageId)).length === 1);
    return { notificationId: created.body.id, messageId, waId };
  }
  const delivery = async (notificationId: string) => (await w.http('GET', `/notifications/${notificationId}`, { secret: w.key.secret })).body.deliveries[0] as { status: string; error_code: string | null };
  const message = async (id: string) => (await w.world.sql<{ status: string; external_id: string | null; error_code: string | null; outcome_checked_at: Date | null }>(`SELECT status, external_id, error_code, outcome_checked_at FROM ${m('messages')} WHERE id = $1`, [id]))[0]!;
  /** Puts a message and its delivery back as they stood before the outcome's event was applied. */
  const loseOutcome = (messageId: string) =>
    w.world.sql(
      `WITH msg AS (UPDATE ${m('messages')} SET status = 'queued', external_id = NULL, sent_at = NULL, failed_at = NULL, error_code = NULL, error_message = NULL WHERE id = $1 RETURNING notification_delivery_id)
       UPDATE ${m('notification_deliveries')} SET status = 'pending', error_code = NULL WHERE id = (SELECT notification_delivery_id FROM msg)`,
      [messageId],
    );

  describe('persist', () => {
    it('applies an entry the provider accepted when its outcome never reached the message: sent with the wamid, delivery sent', async () => {
      const n = await notification();
      await w.drain(1);
      const [call] = await w.sandbox.received(n.waId);
      expect(call).toMatchObject({ outcome: 'accepted' });
      await soon(async () => (await message(n.messageId)).status === 'sent');
      await loseOutcome(n.messageId);
      expect(await message(n.messageId)).toMatchObject({ status: 'queued', external_id: null });

      await soon(async () => {
        await sut.runStep('persist');
        return (await message(n.messageId)).status === 'sent';
      });
      expect(await message(n.messageId)).toMatchObject({ status: 'sent', external_id: call!.provider_id });
      expect(await delivery(n.notificationId)).toMatchObject({ status: 'sent', error_code: null });
      const [entry] = await w.entriesOf(n.messageId);
      expect(entry).toMatchObject({ status: 'accepted', attempts: 1 }); // repaired from the dispatcher's record, never sent again
      expect(await w.sandbox.received(n.waId)).toHaveLength(1);
    });

    it('applies an entry that failed for good: the message fails with the provider code and its delivery fails', async () => {
      const n = await notification();
      await w.sandbox.fault({ kind: 'error', code: 131026, match: { wa_id: n.waId } });
      await w.drain(1);
      await soon(async () => (await w.entriesOf(n.messageId))[0]?.status === 'failed');
      await soon(async () => (await message(n.messageId)).status === 'failed');
      await loseOutcome(n.messageId);

      await soon(async () => {
        await sut.runStep('persist');
        return (await message(n.messageId)).status === 'failed';
      });
      expect(await message(n.messageId)).toMatchObject({ status: 'failed', error_code: '131026' });
      expect(await delivery(n.notificationId)).toMatchObject({ status: 'failed', error_code: '131026' });
    });

    it('settles an ambiguous message whose entry an operator resolved as accepted when the resolution never reached it', async () => {
      const n = await notification();
      await w.sandbox.fault({ kind: 'drop', match: { wa_id: n.waId } });
      await w.drain(1);
      const [entry] = await w.entriesOf(n.messageId);
      expect(entry).toMatchObject({ status: 'ambiguous' });
      await soon(async () => (await message(n.messageId)).status === 'ambiguous');
      const resolved = await w.http('POST', `/outbox/ambiguous/${entry!.id}/resolve`, { secret: w.key.secret, json: { status: 'accepted', note: 'the customer got it' } });
      expect(resolved.status).toBe(200);
      await soon(async () => (await message(n.messageId)).status === 'sent');
      // The resolution's event is lost: the message shows ambiguous again, its delivery pending.
      await w.world.sql(`UPDATE ${m('messages')} SET status = 'ambiguous', sent_at = NULL WHERE id = $1`, [n.messageId]);
      await w.world.sql(`UPDATE ${m('notification_deliveries')} SET status = 'pending' WHERE notification_id = $1`, [n.notificationId]);

      await soon(async () => {
        await sut.runStep('persist');
        return (await message(n.messageId)).status === 'sent';
      });
      expect(await delivery(n.notificationId)).toMatchObject({ status: 'sent' });
    });

    it('leaves a message whose entry is still pending queued, and asks about it again only after another grace', async () => {
      const n = await notification();
      await soon(async () => {
        await sut.runStep('persist');
        return (await message(n.messageId)).outcome_checked_at !== null;
      });
      const first = (await message(n.messageId)).outcome_checked_at!;
      expect(await message(n.messageId)).toMatchObject({ status: 'queued' });
      expect((await w.entriesOf(n.messageId))[0]).toMatchObject({ status: 'pending' });

      await sut.runStep('persist');
      expect((await message(n.messageId)).outcome_checked_at).toEqual(first); // not asked again inside the grace
      await soon(async () => {
        await sut.runStep('persist');
        return (await message(n.messageId)).outcome_checked_at!.getTime() > first.getTime();
      });
      expect(await message(n.messageId)).toMatchObject({ status: 'queued' });
    });
  });

  describe('deliveries', () => {
    it('settles a delivery left pending behind a sent message, and tells subscribers', async () => {
      const n = await notification();
      await w.drain(1);
      await soon(async () => (await delivery(n.notificationId)).status === 'sent');
      await w.world.sql(`UPDATE ${m('notification_deliveries')} SET status = 'pending' WHERE notification_id = $1`, [n.notificationId]);
      await w.world.sql(`DELETE FROM ${m('outbox_events')} WHERE type = 'messaging.notification.delivery_updated' AND payload->'data'->>'message_id' = $1`, [n.messageId]);

      await soon(async () => {
        await sut.runStep('deliveries');
        return (await delivery(n.notificationId)).status === 'sent';
      });
      const updates = await w.world.sql<{ status: string }>(`SELECT payload->'data'->>'status' AS status FROM ${m('outbox_events')} WHERE type = 'messaging.notification.delivery_updated' AND payload->'data'->>'message_id' = $1`, [n.messageId]);
      expect(updates.map((u) => u.status)).toEqual(['sent']);
    });

    it('fails a delivery left pending behind a failed message, with the message code', async () => {
      const n = await notification();
      await w.sandbox.fault({ kind: 'error', code: 131026, match: { wa_id: n.waId } });
      await w.drain(1);
      await soon(async () => (await message(n.messageId)).status === 'failed');
      await w.world.sql(`UPDATE ${m('notification_deliveries')} SET status = 'pending', error_code = NULL WHERE notification_id = $1`, [n.notificationId]);

      await soon(async () => {
        await sut.runStep('deliveries');
        return (await delivery(n.notificationId)).status === 'failed';
      });
      expect(await delivery(n.notificationId)).toMatchObject({ status: 'failed', error_code: '131026' });
    });
  });

  describe('prune', () => {
    it('deletes statuses that matched no message past PENDING_STATUS_TTL_MS and keeps the younger ones', async () => {
      const wamids = [1, 2, 3].map(() => `wamid.outside.${randomUUID().replace(/-/g, '')}`);
      const t = Math.floor(Date.now() / 1000);
      for (const wamid of wamids) expect((await w.meta(statusWebhook(wamid, '5592900000000', 'delivered', t))).status).toBe(200);
      const kept = async () => (await w.world.sql<{ external_id: string }>(`SELECT external_id FROM ${m('pending_statuses')} WHERE external_id = ANY($1::text[]) ORDER BY external_id`, [wamids])).map((r) => r.external_id);
      await soon(async () => (await kept()).length === 3);
      // Two of them came from the storm eight days ago (the default TTL is seven days).
      await w.world.sql(`UPDATE ${m('pending_statuses')} SET received_at = now() - interval '8 days' WHERE external_id = ANY($1::text[])`, [wamids.slice(0, 2)]);

      const result = await sut.runStep('prune');
      expect(result.pruned).toBeGreaterThanOrEqual(2);
      expect(await kept()).toEqual([wamids[2]]);
    });
  });

  it('runs every step when one of them throws', async () => {
    const n = await notification();
    await w.drain(1);
    await soon(async () => (await delivery(n.notificationId)).status === 'sent');
    await w.world.sql(`UPDATE ${m('notification_deliveries')} SET status = 'pending' WHERE notification_id = $1`, [n.notificationId]);
    const persist = jest.spyOn(sut, 'persist').mockRejectedValue(new Error('dispatcher unreachable'));
    try {
      await soon(async () => {
        const report = await sut.sweep();
        expect(report.persist).toMatchObject({ ok: false, error: 'dispatcher unreachable' });
        expect(report.prune).toMatchObject({ ok: true });
        return (await delivery(n.notificationId)).status === 'sent';
      });
    } finally {
      persist.mockRestore();
    }
  });
});
