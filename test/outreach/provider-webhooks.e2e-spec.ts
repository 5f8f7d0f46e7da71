import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { MessagingEvents, MessagingRpc, OutboxCommands } from '@touchpoint/contracts';
import { eventually, untilHandled } from '@touchpoint/testing';
import { signUnsubscribeToken } from '@touchpoint/text';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { UnsubscribeModule } from '../../apps/gateway/src/unsubscribe/unsubscribe.module.js';
import { NylasWebhookModule } from '../../apps/gateway/src/webhooks/nylas/nylas-webhook.module.js';
import { UnipileWebhookModule } from '../../apps/gateway/src/webhooks/unipile/unipile-webhook.module.js';
import { httpClient } from '../gateway/gateway-world.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

const FIXTURES = '/work/shared/fixtures';
const fixture = (path: string) => JSON.parse(readFileSync(`${FIXTURES}/${path}`, 'utf8'));
const NYLAS_SECRET = 'test-nylas-secret';
const UNIPILE_SECRET = 'test-unipile-secret';
const UNSUBSCRIBE_SECRET = 'test-unsubscribe-secret';

/**
 * Nylas and Unipile webhook ingress and the unsubscribe link (seed 003 §4.7, DESIGN §3) through the
 * real gateway, messaging and outreach (runners off), with the fixtures' payload shapes.
 */
describe('provider webhooks and the unsubscribe link', () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  let http: ReturnType<typeof httpClient>;
  const org = `org-${randomUUID()}`;
  const grant = `grant-${randomUUID()}`;
  const account = `acct-${randomUUID()}`;
  const ownMember = 'ACoAAOURSELVES';

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_webhooks', { outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false', OUTREACH_SWEEP_INTERVAL_MS: '0' } });
    b = outreachBuilders(w);
    const config = w.world.config(GatewayConfig, { NYLAS_WEBHOOK_SECRET: NYLAS_SECRET, UNIPILE_WEBHOOK_SECRET: UNIPILE_SECRET, UNIPILE_WEBHOOK_HEADER: 'Unipile-Auth', UNSUBSCRIBE_TOKEN_SECRET: UNSUBSCRIBE_SECRET });
    const gateway = await w.world.start(GatewayModule.forRoot(config, [NylasWebhookModule, UnipileWebhookModule, UnsubscribeModule]), gatewayStartOptions(config));
    http = httpClient((await gateway.getUrl()).replace('[::1]', '127.0.0.1'));
    w.dispatcher.accounts.set(`email|${grant}`, { organization_id: org, sender_id: 'mailbox-1', address: 'sales@ours.example' });
    w.dispatcher.accounts.set(`linkedin|${account}`, { organization_id: org, sender_id: 'li-1', address: ownMember });
  });
  afterAll(() => w.close());

  const messagesOf = (externalId: string) => w.sql(`SELECT * FROM "${w.world.schema('messaging')}".messages WHERE external_id = $1`, [externalId]);
  const nylas = (payload: unknown, secret = NYLAS_SECRET) => {
    const body = JSON.stringify(payload);
    return http('POST', '/webhooks/nylas', { body, headers: { 'content-type': 'application/json', 'x-nylas-signature': createHmac('sha256', secret).update(body).digest('hex') } });
  };
  const nylasMessage = (type: string, m: { id: string; from: string; thread?: string; body?: string; subject?: string; replyTo?: string }) => {
    const n = fixture('nylas/webhook-message-created.json');
    n.type = type;
    n.id = randomUUID();
    Object.assign(n.data.object, {
      id: m.id,
      grant_id: grant,
      from: [{ email: m.from, name: 'Sarah Lee' }],
      to: [{ email: 'sales@ours.example' }],
      folders: ['INBOX'],
      thread_id: m.thread ?? 'thread-x',
      body: m.body ?? '<div>Yes, <b>Tuesday</b> works.</div>',
      subject: m.subject ?? 'Re: Chairs for Acme',
      ...(m.replyTo ? { reply_to_message_id: m.replyTo } : {}),
    });
    return n;
  };
  /** An enrollment with an executed email in the person's email conversation and a pending follow-up draft. */
  const sentAndDrafted = async () => {
    const campaign = await b.campaign(org);
    const e = await b.enrollment(org, campaign.id);
    const earlier = await w.rpc.callUnchecked<{ message_id: string }>('messaging', MessagingRpc.InboundRecord, { organization_id: org, channel: 'email', from: e.person.email, external_id: `old-${randomUUID()}`, text: 'Hello' });
    const [stored] = await w.sql(`SELECT conversation_id FROM "${w.world.schema('messaging')}".messages WHERE id = $1`, [earlier.message_id]);
    // The reply interrupt must see "Hello" before the executed action ties the conversation to this
    // enrollment; seen later, it correlates and bumps the version under the test's feet.
    await eventually(async () => (await w.sql(`SELECT 1 FROM {o}.inbox_events WHERE event_id = $1`, [`messaging.message.received:${earlier.message_id}`]))[0], 10_000);
    const sent = await b.pendingAction(org, e.enrollmentId);
    const sentId = `nylas-${randomUUID()}`;
    await w.sql(`UPDATE {o}.proposed_actions SET status = 'executed', executed_at = now(), provider_message_id = $2, conversation_id = $3 WHERE id = $1`, [sent.actionId, sentId, stored!.conversation_id]);
    const pending = await b.pendingAction(org, e.enrollmentId);
    return { ...e, campaign, sentId, pendingId: pending.actionId, before: await b.enrollmentRow(e.enrollmentId) };
  };

  describe('Nylas', () => {
    it('answers the destination challenge with exactly its value', async () => {
      const res = await http('GET', '/webhooks/nylas?challenge=abc123XYZ');
      expect(res.status).toBe(200);
      expect(res.body).toBe('abc123XYZ');
    });

    it('refuses a bad signature with 401 and stores nothing', async () => {
      const id = `nylas-${randomUUID()}`;
      const res = await nylas(nylasMessage('message.created', { id, from: 'sarah@acme.example' }), 'wrong-secret');
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
      expect(await messagesOf(id)).toEqual([]);
    });

    it('stores a reply once and interrupts once when message.updated arrives before message.created and both are redelivered', async () => {
      const s = await sentAndDrafted();
      const id = `nylas-${randomUUID()}`;
      const answers = [];
      for (const type of ['message.updated', 'message.created', 'message.updated', 'message.created']) answers.push(await nylas(nylasMessage(type, { id, from: s.person.email!, replyTo: s.sentId })));
      expect(answers.map((a) => [a.status, a.body.outcome])).toEqual([
        [200, 'stored'],
        [200, 'duplicate'],
        [200, 'duplicate'],
        [200, 'duplicate'],
      ]);
      const [message] = await messagesOf(id);
      expect(message).toMatchObject({ direction: 'inbound', channel: 'email', body: 'Yes, Tuesday works.', thread_id: 'thread-x' });
      // Its headers were read once, with the mailbox of the webhook's grant; the redeliveries read nothing.
      expect(w.dispatcher.headerReads.filter((r) => r.provider_message_id === id)).toEqual([{ organization_id: org, provider_message_id: id, sender_id: 'mailbox-1' }]);
      // Barrier: outreach handled the message's one event; no second event exists that could interrupt again.
      await untilHandled(w.world, 'outreach', `messaging.message.received:${message!.id}`);
      expect(await w.sql(`SELECT 1 FROM "${w.world.schema('messaging')}".outbox_events WHERE type = $1 AND payload->'data'->>'message_id' = $2`, [MessagingEvents.MessageReceived, message!.id])).toHaveLength(1);
      expect((await b.enrollmentRow(s.enrollmentId)).context_version).toBe(s.before.context_version + 1);
      expect(await w.sql(`SELECT event_id FROM {o}.outbox_events WHERE event_id = $1`, [`reply:${message!.id}`])).toHaveLength(1);
      expect((await b.action(s.pendingId)).status).toBe('invalidated');
    });

    it('ignores our own sent mail and an unknown grant', async () => {
      const own = await nylas(nylasMessage('message.created', { id: `nylas-${randomUUID()}`, from: 'sales@ours.example' }));
      expect(own.body).toMatchObject({ outcome: 'ignored', reason: 'own_message' });
      const stranger = nylasMessage('message.created', { id: `nylas-${randomUUID()}`, from: 'x@y.example' });
      stranger.data.object.grant_id = 'grant-nobody';
      expect((await nylas(stranger)).body).toMatchObject({ outcome: 'ignored', reason: 'unknown_grant' });
    });

    it('answers a bounce 503 while the dispatcher cannot confirm, with the bounce already applied; the redelivery answers 200', async () => {
      const s = await sentAndDrafted();
      const email = s.person.email!.toLowerCase();
      const n = fixture('nylas/webhook-message-bounce-detected.json');
      n.data.grant_id = grant;
      n.data.object.grant_id = grant;
      n.data.object.bounced_addresses = s.person.email;
      w.dispatcher.suppressionAddOutage = true;
      try {
        expect((await nylas(n)).status).toBe(503);
      } finally {
        w.dispatcher.suppressionAddOutage = false;
      }
      expect(await b.enrollmentRow(s.enrollmentId)).toMatchObject({ status: 'active', context_version: s.before.context_version + 1 });
      expect(await b.action(s.pendingId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'bounced' });
      await eventually(() => w.dispatcher.suppressCommands.find((c) => c.value === email && c.reason === 'bounced'));
      // Nylas redelivers: harmless, and now in force.
      expect(await nylas(n)).toMatchObject({ status: 200, body: { outcome: 'bounced' } });
      expect(w.dispatcher.suppressionAdds.filter((a) => a.value === email)).toHaveLength(2);
    });

    it('applies bounce_detected: email suppressed, the enrollment due now with v+1, its email draft invalidated, no event', async () => {
      const s = await sentAndDrafted();
      const n = fixture('nylas/webhook-message-bounce-detected.json');
      n.data.grant_id = grant;
      n.data.object.grant_id = grant;
      n.data.object.bounced_addresses = s.person.email;
      const res = await nylas(n);
      expect(res).toMatchObject({ status: 200, body: { outcome: 'bounced' } });
      expect(w.dispatcher.suppressionAdds.filter((a) => a.value === s.person.email!.toLowerCase())).toEqual([expect.objectContaining({ organization_id: org, channel: 'email', reason: 'bounced' })]);
      const after = await b.enrollmentRow(s.enrollmentId);
      expect(after).toMatchObject({ status: 'active', context_version: s.before.context_version + 1 });
      expect(new Date(after.next_check_at).getTime()).toBeLessThanOrEqual(Date.now());
      expect(await b.action(s.pendingId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'bounced' });
      await eventually(() => w.dispatcher.suppressCommands.find((c) => c.value === s.person.email!.toLowerCase() && c.reason === 'bounced'));
    });

    it('answers 503 when the dispatcher cannot say whose grant it is, so Nylas redelivers', async () => {
      w.dispatcher.accountLookupOutage = true;
      try {
        const res = await nylas(nylasMessage('message.created', { id: `nylas-${randomUUID()}`, from: 'x@y.example' }));
        expect(res.status).toBe(503);
      } finally {
        w.dispatcher.accountLookupOutage = false;
      }
    });
  });

  describe('Unipile', () => {
    const unipile = (payload: unknown, secret: string | null = UNIPILE_SECRET) => http('POST', '/webhooks/unipile', { json: payload, headers: secret === null ? {} : { 'Unipile-Auth': secret } });
    const received = (from: string, messageId = `uni-${randomUUID()}`) => {
      const e = fixture('unipile/webhook-message-received.json');
      Object.assign(e, { account_id: account, message_id: messageId, chat_id: `chat-${randomUUID()}`, message: 'Happy to talk next week' });
      e.account_info.user_id = ownMember;
      e.sender.attendee_provider_id = from;
      return e;
    };

    it('refuses a delivery without the shared secret (401) and stores nothing', async () => {
      const e = received('ACoAAPERSON1');
      expect((await unipile(e, null)).status).toBe(401);
      expect((await unipile(e, 'nope')).status).toBe(401);
      expect(await messagesOf(e.message_id)).toEqual([]);
    });

    it('stores an inbound message once (a redelivery is a duplicate) and skips our own', async () => {
      const e = received(`ACoAAPERSON${randomUUID().slice(0, 6)}`);
      expect((await unipile(e)).body).toMatchObject({ outcome: 'stored' });
      expect((await unipile(e)).body).toMatchObject({ outcome: 'duplicate' });
      const [message] = await messagesOf(e.message_id);
      expect(message).toMatchObject({ channel: 'linkedin', direction: 'inbound', body: 'Happy to talk next week', thread_id: e.chat_id });
      expect((await unipile(received(ownMember))).body).toMatchObject({ outcome: 'ignored', reason: 'own_message' });
    });

    it('answers 503 on any failure so Unipile sends the delivery again', async () => {
      w.dispatcher.accountLookupOutage = true;
      try {
        const e = received('ACoAAPERSON2');
        expect((await unipile(e)).status).toBe(503);
        expect(await messagesOf(e.message_id)).toEqual([]);
      } finally {
        w.dispatcher.accountLookupOutage = false;
      }
    });
  });

  describe('GET|POST /nylas/email/unsubscribe', () => {
    it('suppresses the email and ends the live enrollment opted_out (GET); one-click POST with a form body works too', async () => {
      const s = await sentAndDrafted();
      const token = signUnsubscribeToken({ organization_id: org, email: s.person.email! }, UNSUBSCRIBE_SECRET);
      const res = await http('GET', `/nylas/email/unsubscribe?token=${encodeURIComponent(token)}`);
      expect(res.status).toBe(200);
      // In force at the dispatcher by the answer, not only queued as a command: a send right after the click is refused.
      expect(w.dispatcher.suppressions.has(`${org}|email|${s.person.email!.toLowerCase()}`)).toBe(true);
      expect(w.dispatcher.suppressionAdds.filter((a) => a.value === s.person.email!.toLowerCase())).toEqual([expect.objectContaining({ organization_id: org, channel: 'email', reason: 'unsubscribed' })]);
      expect(await b.enrollmentRow(s.enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'opted_out' });
      expect(await b.action(s.pendingId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'opted_out' });
      await eventually(() => w.dispatcher.suppressCommands.find((c) => c.value === s.person.email!.toLowerCase() && c.reason === 'unsubscribed'));

      const other = await sentAndDrafted();
      const oneClick = signUnsubscribeToken({ organization_id: org, email: other.person.email! }, UNSUBSCRIBE_SECRET);
      const post = await http('POST', `/nylas/email/unsubscribe?token=${encodeURIComponent(oneClick)}`, { body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(post).toMatchObject({ status: 200, body: { unsubscribed: true } });
      expect(await b.enrollmentRow(other.enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'opted_out' });
    });

    it('answers 503 while the dispatcher cannot confirm, with the stop already committed; the repeated click answers 200', async () => {
      const s = await sentAndDrafted();
      const email = s.person.email!.toLowerCase();
      const token = signUnsubscribeToken({ organization_id: org, email: s.person.email! }, UNSUBSCRIBE_SECRET);
      w.dispatcher.suppressionAddOutage = true;
      try {
        const res = await http('GET', `/nylas/email/unsubscribe?token=${encodeURIComponent(token)}`);
        expect(res.status).toBe(503);
        expect(res.body).toMatchObject({ error: { code: 'service_unavailable' } });
      } finally {
        w.dispatcher.suppressionAddOutage = false;
      }
      // The stop path committed whatever the confirmation did: enrollment ended, draft invalidated, the durable command on its way.
      expect(await b.enrollmentRow(s.enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'opted_out' });
      expect(await b.action(s.pendingId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'opted_out' });
      await eventually(() => w.dispatcher.suppressCommands.find((c) => c.value === email && c.reason === 'unsubscribed'));
      const again = await http('GET', `/nylas/email/unsubscribe?token=${encodeURIComponent(token)}`);
      expect(again.status).toBe(200);
      expect(w.dispatcher.suppressionAdds.filter((a) => a.value === email)).toHaveLength(2);
    });

    it('answers 400 to a tampered token and writes nothing', async () => {
      const s = await sentAndDrafted();
      const token = signUnsubscribeToken({ organization_id: org, email: s.person.email! }, UNSUBSCRIBE_SECRET);
      const [body, sig] = token.split('.') as [string, string];
      const otherAddress = Buffer.from(JSON.stringify({ o: org, e: s.person.email })).toString('base64url');
      const forged = signUnsubscribeToken({ organization_id: org, email: s.person.email! }, 'attacker-secret');
      const suppressed = w.dispatcher.suppressCommands.length;
      for (const bad of [`${body}.${sig.slice(1)}`, `${otherAddress}x.${sig}`, forged, 'garbage']) {
        for (const method of ['GET', 'POST']) {
          const res = await http(method, `/nylas/email/unsubscribe?token=${encodeURIComponent(bad)}`, method === 'POST' ? { body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {});
          expect(res.status).toBe(400);
        }
      }
      // The route answers after outreach's RPC committed (or without calling it): a suppression would already be a command in outreach's outbox.
      expect(await w.sql(`SELECT 1 FROM {o}.outbox_events WHERE type = $1 AND payload->'data'->>'value' = $2`, [OutboxCommands.Suppress, s.person.email!.toLowerCase()])).toEqual([]);
      expect(w.dispatcher.suppressCommands.length).toBe(suppressed);
      expect(await b.enrollmentRow(s.enrollmentId)).toMatchObject({ status: 'active', context_version: s.before.context_version });
      expect((await b.action(s.pendingId)).status).toBe('pending_approval');
    });
  });
});
