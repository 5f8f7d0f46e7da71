import { randomUUID } from 'node:crypto';
import { MessagingEvents, OutboxAccountRpc, type OutboxEnqueueData, OutreachDispatcherRpc } from '@touchpoint/contracts';
import { RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { verifyUnsubscribeToken } from '@touchpoint/text';
import { ProspectCapService } from '../../apps/outbox-dispatcher/src/prospect-cap/prospect-cap.service.js';
import { type Dispatcher, SandboxHandle, startDispatcher } from './harness.js';

const UNSUBSCRIBE_SECRET = 'test-unsubscribe-secret';

/**
 * The email (Nylas v3) and LinkedIn (Unipile) adapters and the daily prospect cap (seed 003 §4.6,
 * §6), against the real database and broker and the in-process sandbox, with a
 * hand-moved clock.
 */
describe(ProspectCapService.name, () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let rpc: RpcClient;
  let seq = 0;

  const schema = () => world.schema('outbox-dispatcher');
  const entry = async (id: string) => (await world.sql<Record<string, unknown> & { recipient: string; idempotency_key: string }>(`SELECT * FROM "${schema()}".message_outbox WHERE id = $1`, [id]))[0]!;
  const drain = () => d.drain.drain(10_000);
  const nylasSends = async (grant?: string) =>
    ((await sandbox.get<{ calls: { operation: string; context: Record<string, string>; body: { body: string; custom_headers?: unknown }; outcome: string }[] }>('/sandbox/control/nylas/received')).calls ?? []).filter(
      (c) => c.operation === 'send' && (!grant || c.context.grant_id === grant),
    );
  const unipileCalls = async () => (await sandbox.get<{ calls: { operation: string; context: Record<string, string>; body: unknown; outcome: string }[] }>('/sandbox/control/unipile/received')).calls ?? [];
  const mailbox = async (org: string, provider = 'google') => {
    const grant = `grant-${randomUUID()}`;
    await sandbox.post('/sandbox/nylas/grants', { grant_id: grant, api_key: 'nylas-key', provider });
    const view = await rpc.callUnchecked<{ id: string }>('outbox-dispatcher', OutboxAccountRpc.Create, { organization_id: org, channel: 'email', account_id: grant, address: `sales.${grant.slice(6, 12)}@ours.example`, api_key: 'nylas-key', provider });
    return { grant, senderId: view.id };
  };
  const email = (org: string, to: string, extra: Partial<OutboxEnqueueData> = {}): OutboxEnqueueData => ({
    organization_id: org,
    channel: 'email',
    to,
    idempotency_key: `test:${++seq}:${randomUUID()}`,
    payload: { type: 'text', body: `Hi there,\nline two ${seq}`, subject: `Chairs ${seq}` } as OutboxEnqueueData['payload'],
    log_context: { requester: 'outreach', action_id: `a-${seq}` },
    requester: 'outreach',
    ...extra,
  });

  beforeAll(async () => {
    world = await createTestWorld('outbox_email');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox, { NYLAS_API_BASE_URL: sandbox.url, UNIPILE_API_BASE_URL: sandbox.url, UNSUBSCRIBE_TOKEN_SECRET: UNSUBSCRIBE_SECRET, UNSUBSCRIBE_BASE_URL: 'https://touchpoint.example', NYLAS_SEND_TIMEOUT_MS: '400', UNIPILE_SEND_TIMEOUT_MS: '400' });
    rpc = d.app.get(RpcClient);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(() => sandbox.reset());

  describe('claim (the daily prospect cap)', () => {
    it('holds the 31st prospect email of a UTC day (prospect_send_cap_reached, nothing sent) and the count resets at 00:00 UTC', async () => {
      d.clock.set(new Date('2026-03-02T23:30:00Z'));
      const org = `org-${randomUUID()}`;
      const { grant } = await mailbox(org);
      const ids: string[] = [];
      for (let i = 0; i < 31; i++) ids.push((await d.enqueue.enqueue(email(org, `prospect${i}.${randomUUID().slice(0, 6)}@lead.example`))).entry_id);
      await drain();
      const rows = await Promise.all(ids.map(entry));
      expect(rows.filter((r) => r.status === 'accepted')).toHaveLength(30);
      const refused = rows.filter((r) => r.status === 'failed');
      expect(refused).toHaveLength(1);
      expect(refused[0]).toMatchObject({ last_error_code: 'prospect_send_cap_reached', last_classification: 'permanent' });
      expect(await nylasSends(grant)).toHaveLength(30);
      const [failedEvent] = await world.sql<{ payload: { data: unknown } }>(`SELECT payload FROM "${schema()}".outbox_events WHERE type = 'outbox.entry.failed' AND payload->'data'->>'entry_id' = $1`, [refused[0]!.id]);
      expect(failedEvent!.payload.data).toMatchObject({ error_code: 'prospect_send_cap_reached' });

      // Still the same UTC day: the next one is refused too.
      const sameDay = await d.enqueue.enqueue(email(org, `late.${randomUUID().slice(0, 6)}@lead.example`));
      await drain();
      expect((await entry(sameDay.entry_id)).last_error_code).toBe('prospect_send_cap_reached');

      // 00:00 UTC: a new day, a new count.
      d.clock.set(new Date('2026-03-03T00:00:00Z'));
      const nextDay = await d.enqueue.enqueue(email(org, refused[0]!.recipient, { idempotency_key: `${refused[0]!.idempotency_key}:2` }));
      await drain();
      expect((await entry(nextDay.entry_id)).status).toBe('accepted');
      const [counters] = await world.sql<{ day: string; sent: number }>(`SELECT to_char(day, 'YYYY-MM-DD') AS day, sent FROM "${schema()}".prospect_send_counters WHERE day = '2026-03-03'`);
      expect(counters).toEqual({ day: '2026-03-03', sent: 1 });
    }, 60_000);

    it('never counts an address that wrote to the organization, nor a CRM person already emailed; 0 stops every prospect send', async () => {
      d.clock.set(new Date('2026-03-05T10:00:00Z'));
      const org = `org-${randomUUID()}`;
      await mailbox(org);
      await rpc.call('outbox-dispatcher', OutboxAccountRpc.ProspectCapSet, { organization_id: org, prospect_emails_per_day: 0 });
      const wrote = `wrote.${randomUUID().slice(0, 6)}@lead.example`;
      const crm = `crm.${randomUUID().slice(0, 6)}@client.example`;
      const uow = d.app.get(UnitOfWork);
      await uow.run((tx) =>
        tx.publish([
          {
            event_id: `t:${randomUUID()}`,
            type: MessagingEvents.MessageReceived,
            organization_id: org,
            data: { channel: 'email', direction: 'inbound', from: wrote.toUpperCase(), message_id: 'm', conversation_id: 'c', instance_id: 'i', contact_id: 'x', external_id: 'e', text: 'hi', message_type: 'email', auto_reply: false, opt_out: false },
          },
          { event_id: `t:${randomUUID()}`, type: MessagingEvents.ContactCreated, organization_id: org, data: { contact_id: 'p', kind: 'crm', email: crm } },
        ]),
      );
      const { eventually } = await import('@touchpoint/testing');
      await eventually(async () => (await world.sql(`SELECT count(*)::int AS n FROM "${schema()}".email_correspondents WHERE organization_id = $1`, [org]))[0]!.n === 2);

      const toWrote = await d.enqueue.enqueue(email(org, wrote));
      const toCrmFirst = await d.enqueue.enqueue(email(org, crm));
      await drain();
      expect((await entry(toWrote.entry_id)).status).toBe('accepted');
      // A CRM person we never emailed is still a prospect: with the cap at 0 it is refused.
      expect((await entry(toCrmFirst.entry_id)).last_error_code).toBe('prospect_send_cap_reached');
      // Once emailed (here: an accepted entry exists), the CRM person no longer counts.
      await world.sql(`UPDATE "${schema()}".message_outbox SET status = 'accepted' WHERE id = $1`, [toCrmFirst.entry_id]);
      const toCrmAgain = await d.enqueue.enqueue(email(org, crm));
      d.clock.advance(60_000); // the same recipient: past the pair's pacing interval
      await drain();
      expect((await entry(toCrmAgain.entry_id)).status).toBe('accepted');
    }, 30_000);

    it('counts one slot per entry when two dispatchers race for the last one', async () => {
      d.clock.set(new Date('2026-03-06T10:00:00Z'));
      const org = `org-${randomUUID()}`;
      const { senderId } = await mailbox(org);
      await rpc.call('outbox-dispatcher', OutboxAccountRpc.ProspectCapSet, { organization_id: org, prospect_emails_per_day: 1 });
      const cap = d.app.get(ProspectCapService);
      const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => cap.claim({ entryId: randomUUID(), organizationId: org, recipient: `race${i}@lead.example` }, senderId)));
      expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'refused')).toHaveLength(7);
      const again = randomUUID();
      await world.sql(`DELETE FROM "${schema()}".prospect_cap_settings WHERE organization_id = $1`, [org]);
      expect(await cap.claim({ entryId: again, organizationId: org, recipient: 'r@lead.example' }, senderId)).toBe('claimed');
      expect(await cap.claim({ entryId: again, organizationId: org, recipient: 'r@lead.example' }, senderId)).toBe('already_claimed');
    });
  });

  describe('NylasEmailAdapter', () => {
    it('sends the text with the unsubscribe line, List-Unsubscribe headers on a Google grant and tracking off', async () => {
      d.clock.set(new Date('2026-03-07T10:00:00Z'));
      const org = `org-${randomUUID()}`;
      const { grant } = await mailbox(org, 'google');
      const to = `Ana.${randomUUID().slice(0, 6)}@Lead.example`;
      const queued = await d.enqueue.enqueue(email(org, to));
      await drain();
      const row = await entry(queued.entry_id);
      expect(row.status).toBe('accepted');
      const [call] = await nylasSends(grant);
      expect(row.provider_message_id).toEqual(expect.any(String));
      expect(call!.body).toMatchObject({ subject: expect.stringMatching(/^Chairs /), to: [{ email: to }], tracking_options: { opens: false, links: false, thread_replies: false } });
      expect(call!.body.body).toMatch(/^Hi there,<br>line two \d+<br><br>Unsubscribe: https:\/\/touchpoint\.example\/nylas\/email\/unsubscribe\?token=/);
      const token = decodeURIComponent(/token=([^<\s]+)/.exec(call!.body.body)![1]!);
      expect(verifyUnsubscribeToken(token, UNSUBSCRIBE_SECRET)).toEqual({ organization_id: org, email: to.toLowerCase() });
      expect(call!.body.custom_headers).toEqual([
        { name: 'List-Unsubscribe', value: expect.stringMatching(/^<https:\/\/touchpoint\.example\/nylas\/email\/unsubscribe\?token=.+>$/) },
        { name: 'List-Unsubscribe-Post', value: 'List-Unsubscribe=One-Click' },
      ]);
    });

    it('replies in the thread of the answered message; no List-Unsubscribe on a Microsoft grant; no unsubscribe line for a non-outreach send', async () => {
      const org = `org-${randomUUID()}`;
      const { grant } = await mailbox(org, 'microsoft');
      const inbound = await sandbox.post<{ message: { id: string; thread_id: string } }>('/sandbox/nylas/inbound', { grant_id: grant, from: 'ana@lead.example', subject: 'Question', types: [] });
      const reply = await d.enqueue.enqueue(email(org, 'ana@lead.example', { payload: { type: 'text', body: 'Yes, Tuesday.', subject: 'Re: Question', reply_to: inbound.message.id } as OutboxEnqueueData['payload'] }));
      const plain = await d.enqueue.enqueue(email(org, 'bo@lead.example', { log_context: { requester: 'messaging' }, requester: 'messaging' }));
      await drain();
      const calls = await nylasSends(grant);
      const replyCall = calls.find((c) => c.context.to === 'ana@lead.example')!;
      expect(replyCall.body).toMatchObject({ subject: 'Re: Question', reply_to_message_id: inbound.message.id });
      expect(replyCall.body.custom_headers).toBeUndefined();
      expect(replyCall.body.body).toContain('Unsubscribe: ');
      const { messages } = await sandbox.get<{ messages: { id: string; thread_id: string }[] }>('/sandbox/nylas/messages');
      const sentId = (await entry(reply.entry_id)).provider_message_id;
      expect(messages.find((m) => m.id === sentId)?.thread_id).toBe(inbound.message.thread_id);
      expect(calls.find((c) => c.context.to === 'bo@lead.example')!.body.body).not.toContain('Unsubscribe');
      expect((await entry(plain.entry_id)).status).toBe('accepted');
    });

    it('parks a send that timed out as ambiguous and never resends it; a 5xx is retried', async () => {
      const org = `org-${randomUUID()}`;
      const { grant } = await mailbox(org);
      await sandbox.post('/sandbox/control/nylas/faults', {
        faults: [
          { kind: 'timeout', hold_ms: 2000, match: { to: 'slow@lead.example' } },
          { kind: 'error', status: 503, match: { to: 'flaky@lead.example' } },
        ],
      });
      const slow = await d.enqueue.enqueue(email(org, 'slow@lead.example'));
      const flaky = await d.enqueue.enqueue(email(org, 'flaky@lead.example'));
      await drain();
      expect(await entry(slow.entry_id)).toMatchObject({ status: 'ambiguous', last_classification: 'ambiguous' });
      expect(await entry(flaky.entry_id)).toMatchObject({ status: 'pending', last_classification: 'transient' });
      d.clock.advance(3_600_000);
      await drain();
      expect((await entry(flaky.entry_id)).status).toBe('accepted');
      expect((await nylasSends(grant)).filter((c) => c.context.to === 'slow@lead.example')).toHaveLength(1);
    });

    it('answers outbox.email.headers with the headers of a message, read with the grant of the mailbox it arrived on (one Nylas read)', async () => {
      const org = `org-${randomUUID()}`;
      const other = await mailbox(org);
      const { grant, senderId } = await mailbox(org);
      const inbound = await sandbox.post<{ message: { id: string } }>('/sandbox/nylas/inbound', { grant_id: grant, from: 'ooo@lead.example', subject: 'Automatic reply: Chairs', headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }], types: [] });
      const view = await rpc.callUnchecked<{ headers: { name: string; value: string }[]; subject: string }>('outbox-dispatcher', OutreachDispatcherRpc.EmailHeaders, { organization_id: org, provider_message_id: inbound.message.id, sender_id: senderId });
      expect(view).toEqual({ headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }], subject: 'Automatic reply: Chairs' });
      // Another mailbox's grant cannot read it (Nylas: 404), and a read that names no mailbox is refused (no default is assumed).
      const wrong = (await rpc.callUnchecked('outbox-dispatcher', OutreachDispatcherRpc.EmailHeaders, { organization_id: org, provider_message_id: inbound.message.id, sender_id: other.senderId }).catch((e: unknown) => e)) as { code?: string; message?: string };
      expect(wrong).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('404') });
      const unnamed = (await rpc.callUnchecked('outbox-dispatcher', OutreachDispatcherRpc.EmailHeaders, { organization_id: org, provider_message_id: inbound.message.id }).catch((e: unknown) => e)) as { code?: string };
      expect(unnamed).toMatchObject({ code: 'validation_failed' });
    });
  });

  describe('UnipileLinkedinAdapter', () => {
    const linkedinAccount = async (org: string) => {
      const account = `acct-${randomUUID()}`;
      await sandbox.post('/sandbox/unipile/accounts', { account_id: account, api_key: 'unipile-key' });
      const view = await rpc.callUnchecked<{ id: string }>('outbox-dispatcher', OutboxAccountRpc.Create, { organization_id: org, channel: 'linkedin', account_id: account, address: 'ACoAAOURS', api_key: 'unipile-key' });
      return { account, senderId: view.id };
    };
    const linkedin = (org: string, to: string, action: 'invite' | 'message', body = 'Hi Ana, glad to connect.'): OutboxEnqueueData => ({
      organization_id: org,
      channel: 'linkedin',
      to,
      idempotency_key: `li:${++seq}:${randomUUID()}`,
      payload: { type: 'text', body },
      log_context: { requester: 'outreach', linkedin_action: action },
      requester: 'outreach',
    });

    it('sends an invitation with its note and a chat message; the LinkedIn state follows what went out', async () => {
      const org = `org-${randomUUID()}`;
      const { account, senderId } = await linkedinAccount(org);
      const invite = await d.enqueue.enqueue(linkedin(org, 'ACoAAANA', 'invite'));
      await drain();
      expect((await entry(invite.entry_id)).provider_message_id).toMatch(/^inv/);
      const state = () => rpc.callUnchecked<{ state: string; sender_connected: boolean }>('outbox-dispatcher', OutreachDispatcherRpc.LinkedinState, { organization_id: org, sender_id: senderId, linkedin_url: null, provider_id: 'ACoAAANA' });
      expect(await state()).toMatchObject({ state: 'invited', sender_connected: true });
      const message = await d.enqueue.enqueue(linkedin(org, 'ACoAAANA', 'message', 'Thanks for connecting, Ana!'));
      d.clock.advance(60_000);
      await drain();
      expect((await entry(message.entry_id)).provider_message_id).toMatch(/^msg/);
      expect(await state()).toMatchObject({ state: 'connected' });
      const calls = await unipileCalls();
      expect(calls.find((c) => c.operation === 'invite')).toMatchObject({ outcome: 'accepted', body: { provider_id: 'ACoAAANA', account_id: account, message: 'Hi Ana, glad to connect.' } });
      expect(calls.find((c) => c.operation === 'chat')).toMatchObject({ outcome: 'accepted', body: { account_id: account, text: 'Thanks for connecting, Ana!', attendees_ids: 'ACoAAANA' } });
    });

    it('resolves a profile URL to the member id before inviting (one Unipile read, kept for a retry); an unknown profile fails profile_not_found', async () => {
      const org = `org-${randomUUID()}`;
      await linkedinAccount(org);
      await sandbox.post('/sandbox/unipile/profiles', { public_identifier: 'ana-lee', provider_id: 'ACoAAANALEE' });
      const byUrl = await d.enqueue.enqueue(linkedin(org, 'https://www.linkedin.com/in/ana-lee/', 'invite'));
      const unknown = await d.enqueue.enqueue(linkedin(org, 'https://www.linkedin.com/in/nobody-here', 'invite'));
      await drain();
      expect(await entry(byUrl.entry_id)).toMatchObject({ status: 'accepted', prepared: { provider_id: 'ACoAAANALEE' } });
      expect(await entry(unknown.entry_id)).toMatchObject({ status: 'failed', last_error_code: 'profile_not_found' });
      const calls = await unipileCalls();
      expect(calls.find((c) => c.operation === 'invite' && c.context.provider_id === 'ACoAAANALEE')).toBeDefined();
      expect(calls.filter((c) => c.operation === 'invite' && c.context.provider_id.includes('nobody'))).toEqual([]);
    });

    it('fails an invitation to a relation with already_connected, and one sent too soon with connection_held (nothing sent)', async () => {
      const org = `org-${randomUUID()}`;
      const { account } = await linkedinAccount(org);
      await sandbox.post('/sandbox/unipile/relations', { account_id: account, provider_id: 'ACoAAREL', state: 'connected' });
      await sandbox.post('/sandbox/unipile/relations', { account_id: account, provider_id: 'ACoAAHELD', state: 'held' });
      const connected = await d.enqueue.enqueue(linkedin(org, 'ACoAAREL', 'invite'));
      const held = await d.enqueue.enqueue(linkedin(org, 'ACoAAHELD', 'invite'));
      await drain();
      expect(await entry(connected.entry_id)).toMatchObject({ status: 'failed', last_error_code: 'already_connected', last_classification: 'permanent' });
      expect(await entry(held.entry_id)).toMatchObject({ status: 'failed', last_error_code: 'connection_held', last_classification: 'permanent' });
    });
  });
});
