import { randomUUID } from 'node:crypto';
import { type MessageReceivedData, MessagingEvents, MessagingRpc, type MessagingInboundRecordData, OutreachRpc } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { duplicateCounts, eventually, untilHandled, untilRedeliveryDiscarded } from '@touchpoint/testing';
import { ReplyInterruptService } from '../../apps/outreach/src/interrupts/reply-interrupt.service.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/**
 * The reply interrupt (seed 003 §4.7) end to end from messaging's `messaging.inbound.record` (what the
 * gateway's Nylas and Unipile ingress call) to outreach's rows and events. The runner loops are off,
 * so the rows stay as the interrupt leaves them.
 */
describe(ReplyInterruptService.name, () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  const org = `org-${randomUUID()}`;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_interrupt', { outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false', OUTREACH_SWEEP_INTERVAL_MS: '0' } });
    b = outreachBuilders(w);
  });
  afterAll(() => w.close());

  /** An enrollment whose first email went out (provider id `sentId`) and whose follow-up draft waits for review. */
  const sentAndDrafted = async (opts: { channels?: string[]; contact?: Record<string, unknown>; type?: string } = {}) => {
    const campaign = await b.campaign(org, opts.channels ? { allowed_channels: opts.channels, linkedin_sender_id: w.dispatcher.addSender(org, 'linkedin') } : {});
    const e = await b.enrollment(org, campaign.id, opts.contact ?? {});
    const sent = await b.pendingAction(org, e.enrollmentId, { type: opts.type });
    const sentId = `nylas-${randomUUID()}`;
    await w.sql(`UPDATE {o}.proposed_actions SET status = 'executed', executed_at = now(), provider_message_id = $2 WHERE id = $1`, [sent.actionId, sentId]);
    const pending = await b.pendingAction(org, e.enrollmentId, { type: opts.type });
    const before = await b.enrollmentRow(e.enrollmentId);
    return { campaign, ...e, sentId, pendingId: pending.actionId, before };
  };
  const inbound = (data: Partial<MessagingInboundRecordData> & { from: string }) =>
    w.rpc.callUnchecked<{ message_id: string; duplicate: boolean }>('messaging', MessagingRpc.InboundRecord, { organization_id: org, channel: 'email', external_id: `in-${randomUUID()}`, text: 'Sounds good, tell me more', subject: 'Re: Chairs for Acme', headers: [], ...data });
  const replyEvents = (enrollmentId: string) => w.sql(`SELECT event_id, payload FROM {o}.outbox_events WHERE type = 'outreach.decision.requested' AND payload->'data'->>'enrollment_id' = $1 AND event_id LIKE 'reply:%'`, [enrollmentId]);
  /** Waits until outreach consumed messaging's event for `messageId` (its inbox row). */
  const consumed = (messageId: string) => eventually(async () => (await w.sql(`SELECT 1 FROM {o}.inbox_events WHERE event_id = $1`, [`messaging.message.received:${messageId}`]))[0], 10_000);

  describe('handle', () => {
    it('interrupts once per message whatever webhook type stores it first: message.updated before message.created, then both redelivered', async () => {
      const s = await sentAndDrafted();
      const externalId = `nylas-in-${randomUUID()}`;
      // Nylas does not order the two types; the first one to arrive stores the row.
      const updated = await inbound({ from: s.person.email!, external_id: externalId, in_reply_to: s.sentId, thread_id: 'thread-1', text: 'Yes, Tuesday works' });
      const created = await inbound({ from: s.person.email!, external_id: externalId, in_reply_to: s.sentId, thread_id: 'thread-1', text: 'Yes, Tuesday works' });
      const again = await inbound({ from: s.person.email!, external_id: externalId, in_reply_to: s.sentId, thread_id: 'thread-1', text: 'Yes, Tuesday works' });
      expect(updated.duplicate).toBe(false);
      expect([created.duplicate, again.duplicate]).toEqual([true, true]);
      expect(created.message_id).toBe(updated.message_id);

      await consumed(updated.message_id);
      const [event] = await replyEvents(s.enrollmentId);
      expect(event).toMatchObject({ event_id: `reply:${updated.message_id}`, payload: { data: { enrollment_id: s.enrollmentId, reason: 'reply_received', ref: updated.message_id } } });
      const after = await b.enrollmentRow(s.enrollmentId);
      expect(after.context_version).toBe(s.before.context_version + 1);
      expect(new Date(after.next_check_at).getTime()).toBeGreaterThan(Date.now() + 25 * 60_000); // the event lease
      expect(await b.action(s.pendingId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'context_changed' });
      // A prospect's first real reply makes them a CRM person; the enrollment follows.
      expect(after.person_kind).toBe('crm');
      expect((await w.rpc.callUnchecked<{ kind: string }>('messaging', MessagingRpc.ContactGet, { organization_id: org, contact_id: s.person.id })).kind).toBe('crm');

      // The event itself redelivered (same id): the inbox drops it.
      const uow = w.outreach.get(UnitOfWork);
      const [stored] = await w.sql(`SELECT * FROM "${w.world.schema('messaging')}".messages WHERE id = $1`, [updated.message_id]);
      const data: MessageReceivedData = {
        message_id: updated.message_id,
        conversation_id: stored!.conversation_id,
        instance_id: stored!.instance_id,
        contact_id: stored!.contact_id,
        channel: 'email',
        direction: 'inbound',
        external_id: externalId,
        thread_id: 'thread-1',
        text: 'Yes, Tuesday works',
        message_type: 'email',
        in_reply_to: s.sentId,
        auto_reply: false,
        opt_out: false,
        from: s.person.email!,
      };
      const duplicatesBefore = await duplicateCounts(w.outreach);
      await uow.run((tx) => tx.publish({ event_id: `messaging.message.received:${updated.message_id}`, type: MessagingEvents.MessageReceived, organization_id: org, data: data }));
      // The same message under another event id, after the reply's decision was saved: that decision is the guard.
      await w.sql(
        `INSERT INTO {o}.decisions (organization_id, enrollment_id, trigger_event_id, trigger_reason, trigger_ref, context_version, outcome, type, created_at, updated_at)
         VALUES ($1, $2, $3, 'reply_received', $4, $5, 'saved', 'email', now(), now())`,
        [org, s.enrollmentId, `reply:${updated.message_id}`, updated.message_id, after.context_version],
      );
      const replayId = `replay:${randomUUID()}`;
      await uow.run((tx) => tx.publish({ event_id: replayId, type: MessagingEvents.MessageReceived, organization_id: org, data: data }));
      // Barriers: the redelivery was taken and discarded by the inbox, and the replay's handler committed.
      await untilRedeliveryDiscarded(w.world, w.outreach, 'outreach', `messaging.message.received:${updated.message_id}`, duplicatesBefore);
      await untilHandled(w.world, 'outreach', replayId);
      expect((await b.enrollmentRow(s.enrollmentId)).context_version).toBe(after.context_version);
      expect(await replyEvents(s.enrollmentId)).toHaveLength(1);
    });

    it.each([
      ['Auto-Submitted: auto-replied', { headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }], subject: 'Re: Chairs for Acme' }],
      ['Auto-Submitted: auto-generated', { headers: [{ name: 'Auto-Submitted', value: 'auto-generated' }] }],
      ['a localised out-of-office subject with no headers', { subject: 'Respuesta automática: Sillas para Acme' }],
    ])('stores an auto-reply (%s) and interrupts nothing', async (_label, extra) => {
      const s = await sentAndDrafted();
      const r = await inbound({ from: s.person.email!, in_reply_to: s.sentId, text: 'I am away until Monday.', ...extra });
      await consumed(r.message_id);
      expect((await b.enrollmentRow(s.enrollmentId)).context_version).toBe(s.before.context_version);
      expect((await b.action(s.pendingId)).status).toBe('pending_approval');
      expect(await replyEvents(s.enrollmentId)).toEqual([]);
      // An auto-reply is not a real reply: the prospect stays a prospect.
      expect((await w.rpc.callUnchecked<{ kind: string }>('messaging', MessagingRpc.ContactGet, { organization_id: org, contact_id: s.person.id })).kind).toBe('prospect');
    });

    it('treats Auto-Submitted: no as a human reply', async () => {
      const s = await sentAndDrafted();
      const r = await inbound({ from: s.person.email!, in_reply_to: s.sentId, headers: [{ name: 'Auto-Submitted', value: 'no' }] });
      await consumed(r.message_id);
      expect(await replyEvents(s.enrollmentId)).toHaveLength(1);
    });

    it('correlates email by the Outreach threads only: a later message of the thread interrupts, an email the person starts on a new thread does not', async () => {
      const s = await sentAndDrafted();
      const thread = `thread-${randomUUID()}`;
      const first = await inbound({ from: s.person.email!, in_reply_to: s.sentId, thread_id: thread });
      await consumed(first.message_id);
      // Execution records the conversation the email went out in (messaging's one email conversation of the person).
      const [stored] = await w.sql(`SELECT conversation_id FROM "${w.world.schema('messaging')}".messages WHERE id = $1`, [first.message_id]);
      await w.sql(`UPDATE {o}.proposed_actions SET conversation_id = $2 WHERE provider_message_id = $1`, [s.sentId, stored!.conversation_id]);
      // The same thread, naming none of our ids (the person adds a line to their own answer).
      const second = await inbound({ from: s.person.email!, thread_id: thread, text: 'One more thing: do you ship to Lisbon?' });
      await consumed(second.message_id);
      // A new thread from the same address, in the same messaging conversation: outside Outreach.
      const fresh = await inbound({ from: s.person.email!, thread_id: `thread-${randomUUID()}`, subject: 'Invoice for last month', text: 'Can you resend the invoice?' });
      await consumed(fresh.message_id);
      const [again] = await w.sql(`SELECT conversation_id FROM "${w.world.schema('messaging')}".messages WHERE id = $1`, [fresh.message_id]);
      expect(again!.conversation_id).toBe(stored!.conversation_id);
      expect((await replyEvents(s.enrollmentId)).map((e) => e.event_id).sort()).toEqual([`reply:${first.message_id}`, `reply:${second.message_id}`].sort());
    });

    it('bumps but sends no event while the campaign is paused (the sweep asks after resume)', async () => {
      const s = await sentAndDrafted();
      await w.rpc.call('outreach', OutreachRpc.CampaignPause, { organization_id: org, campaign_id: s.campaign.id });
      const r = await inbound({ from: s.person.email!, in_reply_to: s.sentId });
      await consumed(r.message_id);
      const after = await b.enrollmentRow(s.enrollmentId);
      expect(after.context_version).toBe(s.before.context_version + 1);
      expect(new Date(after.next_check_at).getTime()).toBeLessThanOrEqual(Date.now());
      expect(await replyEvents(s.enrollmentId)).toEqual([]);
      expect((await b.action(s.pendingId)).status).toBe('invalidated');
    });

    it('stores a message from a stranger and one to an ended enrollment, and touches nothing', async () => {
      const stranger = await inbound({ from: `nobody.${randomUUID().slice(0, 6)}@else.example` });
      await consumed(stranger.message_id);
      const s = await sentAndDrafted();
      await w.rpc.call('outreach', OutreachRpc.EnrollmentExit, { organization_id: org, enrollment_id: s.enrollmentId });
      const ended = await b.enrollmentRow(s.enrollmentId);
      const r = await inbound({ from: s.person.email!, in_reply_to: s.sentId });
      await consumed(r.message_id);
      expect((await b.enrollmentRow(s.enrollmentId)).context_version).toBe(ended.context_version);
      expect(await replyEvents(s.enrollmentId)).toEqual([]);
    });

    it('opts out on a phrase: every channel value suppressed, then every live enrollment of the person (by id and by address) ended opted_out with its actions invalidated, no agent', async () => {
      const s = await sentAndDrafted({ contact: { linkedin_provider_id: `ACo${randomUUID().slice(0, 8)}` } });
      // The same address held by a CRM person live in another campaign.
      const other = await b.campaign(org);
      const twin = await b.enrollment(org, other.id, { kind: 'crm', email: s.person.email! });
      const twinDraft = await b.pendingAction(org, twin.enrollmentId);

      const r = await inbound({ from: s.person.email!, in_reply_to: s.sentId, text: 'Please remove me from your list.\n\nOn Mon, Ana wrote:\n> Unsubscribe: https://x.example/u' });
      await consumed(r.message_id);

      await eventually(() => w.dispatcher.suppressCommands.filter((c) => c.organization_id === org && c.value === s.person.linkedin_provider_id).length > 0);
      const values = w.dispatcher.suppressCommands.filter((c) => c.organization_id === org && [s.person.email!.toLowerCase(), s.person.linkedin_provider_id].includes(c.value));
      expect(values.map((v) => `${v.channel}:${v.value}`).sort()).toEqual([`email:${s.person.email!.toLowerCase()}`, `linkedin:${s.person.linkedin_provider_id}`].sort());
      for (const id of [s.enrollmentId, twin.enrollmentId]) expect(await b.enrollmentRow(id)).toMatchObject({ status: 'ended', ended_reason: 'opted_out' });
      expect(await b.action(s.pendingId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'opted_out' });
      expect(await b.action(twinDraft.actionId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'opted_out' });
      expect(await replyEvents(s.enrollmentId)).toEqual([]);
    });

    it("ends the person's live enrollment when messaging opts the contact out on a message that answers no thread of ours (stop means stop on every channel)", async () => {
      const s = await sentAndDrafted();
      // A fresh email, not a reply: the interrupt cannot correlate it, but messaging judges it an opt-out.
      const r = await inbound({ from: s.person.email!, subject: 'Lista', text: 'Me tira da lista' });
      await consumed(r.message_id);
      await eventually(async () => (await b.enrollmentRow(s.enrollmentId)).status === 'ended', 15_000);
      expect(await b.enrollmentRow(s.enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'opted_out' });
      expect(await b.action(s.pendingId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'opted_out' });
      expect(await replyEvents(s.enrollmentId)).toEqual([]);
    });

    it('interrupts on LinkedIn when the chat carries the id of our invitation', async () => {
      const s = await sentAndDrafted({ channels: ['linkedin'], type: 'linkedin_connection', contact: { linkedin_provider_id: `ACo${randomUUID().slice(0, 8)}` } });
      const r = await w.rpc.callUnchecked<{ message_id: string }>('messaging', MessagingRpc.InboundRecord, {
        organization_id: org,
        channel: 'linkedin',
        from: s.person.linkedin_provider_id,
        external_id: `unipile-${randomUUID()}`,
        thread_id: `chat-${randomUUID()}`,
        in_reply_to: s.sentId,
        text: 'Thanks for connecting! What do you sell?',
      });
      await consumed(r.message_id);
      expect(await replyEvents(s.enrollmentId)).toHaveLength(1);
    });
  });
});
