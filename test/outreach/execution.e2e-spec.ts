import { randomUUID } from 'node:crypto';
import { type ActionView, MessagingCommands, MessagingRpc, OutreachRpc } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { eventually } from '@touchpoint/testing';
import { ExecutionRunner } from '../../apps/outreach/src/execution/execution.runner.js';
import { approvedHash } from '../../apps/outreach/src/review/canonical-json.js';
import { actionApproved } from '../../apps/outreach/src/review/review.service.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

const DAY = 86_400_000;

/** Milliseconds of a Date, an ISO string or a timestamp column (Date.parse drops a Date's milliseconds). */
const ms = (value: unknown): number => new Date(value as string).getTime();

describe(ExecutionRunner.name, () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  let uow: UnitOfWork;
  const org = `org-${randomUUID()}`;
  const actor = { member_id: 'member-1' };

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_exec', { model: true });
    b = outreachBuilders(w);
    uow = w.outreach.get(UnitOfWork);
  });
  afterAll(() => w.close());

  const run = (key: string) => eventually(async () => (await w.sql(`SELECT * FROM {o}.workflow_runs WHERE run_key = $1 AND status IN ('done', 'failed')`, [key]))[0], 20_000);
  /** A person enrolled and drafted by the real decision runner (sandbox model): a pending email. */
  const drafted = async (campaignExtra: Record<string, unknown> = {}) => {
    const c = await b.campaign(org, campaignExtra);
    const e = await b.enrollment(org, c.id);
    await run(`enrolled:${e.enrollmentId}`);
    const [action] = await w.sql(`SELECT * FROM {o}.proposed_actions WHERE enrollment_id = $1 AND status = 'pending_approval'`, [e.enrollmentId]);
    return { campaign: c, ...e, actionId: action!.id as string };
  };
  const approve = (actionId: string) => w.rpc.callUnchecked<ActionView>('outreach', OutreachRpc.ActionApprove, { organization_id: org, action_id: actionId, actor });
  const entryOf = (actionId: string) => eventually(() => w.dispatcher.entriesFor(`outreach:${actionId}`)[0]);
  /** Leaves an action approved (as approve does) without starting its execution, so a test can change the world first. */
  const approvedOnly = async (actionId: string, to: unknown) => {
    const action = await b.action(actionId);
    const payload = { ...action.draft_payload, to };
    await w.sql(`UPDATE {o}.proposed_actions SET status = 'approved', approved_payload = $2, approved_hash = $3, approved_by = 'member-1', approved_at = now(), next_attempt_at = now() WHERE id = $1`, [actionId, JSON.stringify(payload), approvedHash(payload)]);
    return (await b.action(actionId)).next_attempt_at as Date;
  };
  const execute = async (actionId: string, enrollmentId: string, at: Date) => {
    const message = actionApproved(org, actionId, enrollmentId, at);
    await uow.run((tx) => tx.publish(message));
    return run(message.event_id);
  };

  it('sends the approved text through messaging.send and the dispatcher, then records executed, touch_count + 1 and the next check', async () => {
    const { enrollmentId, actionId, person } = await drafted();
    const approved = await approve(actionId);

    const entry = await entryOf(actionId);
    expect(entry).toMatchObject({ organization_id: org, channel: 'email', to: person.email, payload: { type: 'text', body: (approved.approved_payload as { body: string }).body, subject: (approved.approved_payload as { subject: string }).subject } });
    expect(entry.log_context).toMatchObject({ requester: 'outreach', action_id: actionId, enrollment_id: enrollmentId });
    expect((await b.action(actionId)).status).toBe('sending');
    const [message] = await w.sql(`SELECT * FROM "${w.world.schema('messaging')}".messages WHERE idempotency_key = $1`, [`outreach:${actionId}`]);
    expect(message).toMatchObject({ direction: 'outbound', channel: 'email', sender_type: 'outreach', status: 'queued' });

    await w.dispatcher.settle(entry, 'accepted', { provider_message_id: 'nylas-msg-1' });

    const executed = await eventually(async () => ((await b.action(actionId)).status === 'executed' ? b.action(actionId) : null));
    expect(executed).toMatchObject({ message_id: message!.id, provider_message_id: 'nylas-msg-1', outcome_unknown: false });
    const row = await b.enrollmentRow(enrollmentId);
    expect(row.touch_count).toBe(1);
    expect(row.context_version).toBe(2);
    expect(ms(row.next_check_at) - new Date(executed.executed_at).getTime()).toBe(3 * DAY);
  });

  it('records an ambiguous send as failed with outcome unknown, counts it as a touch, and never sends it again', async () => {
    const { enrollmentId, actionId } = await drafted();
    const approved = await approve(actionId);
    const entry = await entryOf(actionId);

    await w.dispatcher.settle(entry, 'ambiguous', { error_code: 'timeout' });

    const failed = await eventually(async () => ((await b.action(actionId)).status === 'failed' ? b.action(actionId) : null));
    expect(failed).toMatchObject({ outcome_unknown: true, failure_reason: 'outcome_unknown' });
    const row = await b.enrollmentRow(enrollmentId);
    expect(row.touch_count).toBe(1);
    expect(row.next_check_at).not.toBeNull();

    // A late approved event (the sweep's, a replay) finds the action settled: nothing goes out.
    // Barrier: `execute` returns once the late event's run is done, so a send it decided would be a
    // command in outreach's outbox by now (each attempt has its own key): there is still one.
    await execute(actionId, enrollmentId, new Date(ms(approved.next_attempt_at!) + 1000));
    expect(await w.sql(`SELECT 1 FROM {o}.outbox_events WHERE type = $1 AND payload->'data'->'context'->>'action_id' = $2`, [MessagingCommands.Send, actionId])).toHaveLength(1);
    expect(w.dispatcher.enqueued.filter((e) => e.log_context?.action_id === actionId)).toHaveLength(1);
    expect((await b.enrollmentRow(enrollmentId)).touch_count).toBe(1);

    // Settled later as accepted: executed, still one touch.
    await w.dispatcher.settle(entry, 'accepted', { provider_message_id: 'nylas-late' });
    await eventually(async () => (await b.action(actionId)).status === 'executed');
    expect((await b.enrollmentRow(enrollmentId)).touch_count).toBe(1);
  });

  it('invalidates the action and wakes the enrollment when the address changed between approve and execution', async () => {
    const { enrollmentId, actionId, person } = await drafted();
    const at = await approvedOnly(actionId, person.email);
    await w.rpc.call('messaging', MessagingRpc.ContactUpdate, { organization_id: org, contact_id: person.id, email: `new.${randomUUID().slice(0, 6)}@acme.example` });
    const before = await b.enrollmentRow(enrollmentId);

    await execute(actionId, enrollmentId, at);

    expect(await b.action(actionId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'recipient_changed' });
    const after = await b.enrollmentRow(enrollmentId);
    expect(after.context_version).toBe(before.context_version + 1);
    expect(ms(after.next_check_at)).toBeLessThanOrEqual(Date.now());
    expect(w.dispatcher.entriesFor(`outreach:${actionId}`)).toEqual([]);
  });

  it('invalidates an action whose address was suppressed after approve, and one whose hash no longer matches', async () => {
    const first = await drafted();
    const at1 = await approvedOnly(first.actionId, first.person.email);
    w.dispatcher.suppress(org, 'email', first.person.email!);
    await execute(first.actionId, first.enrollmentId, at1);
    expect(await b.action(first.actionId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'suppressed' });

    const second = await drafted();
    const at2 = await approvedOnly(second.actionId, second.person.email);
    await w.sql(`UPDATE {o}.proposed_actions SET approved_payload = jsonb_set(approved_payload, '{body}', '"tampered"') WHERE id = $1`, [second.actionId]);
    await execute(second.actionId, second.enrollmentId, at2);
    expect(await b.action(second.actionId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'hash_mismatch' });
    expect(w.dispatcher.entriesFor(`outreach:${second.actionId}`)).toEqual([]);
  });

  it('holds an approved action while the campaign is paused or outreach is stopped: it stays approved with next_attempt_at = now', async () => {
    const { enrollmentId, actionId, person, campaign } = await drafted();
    const at = await approvedOnly(actionId, person.email);
    await w.rpc.call('outreach', OutreachRpc.CampaignPause, { organization_id: org, campaign_id: campaign.id });
    const started = Date.now();
    await execute(actionId, enrollmentId, at);
    const held = await b.action(actionId);
    expect(held.status).toBe('approved');
    expect(new Date(held.next_attempt_at).getTime()).toBeGreaterThanOrEqual(started - 1000);
    expect(w.dispatcher.entriesFor(`outreach:${actionId}`)).toEqual([]);

    await w.rpc.call('outreach', OutreachRpc.CampaignResume, { organization_id: org, campaign_id: campaign.id });
    await execute(actionId, enrollmentId, new Date(held.next_attempt_at));
    expect((await entryOf(actionId)).idempotency_key).toBe(`outreach:${actionId}`);
  });

  it('turns a sender refusal (suppressed at the wire) into invalidated and wakes the enrollment', async () => {
    const { enrollmentId, actionId } = await drafted();
    await approve(actionId);
    const entry = await entryOf(actionId);
    const before = await b.enrollmentRow(enrollmentId);
    await w.dispatcher.settle(entry, 'failed', { classification: 'suppressed', error_code: 'suppressed' });

    await eventually(async () => (await b.action(actionId)).status === 'invalidated');
    const after = await b.enrollmentRow(enrollmentId);
    expect(after.context_version).toBe(before.context_version + 1);
    expect(after.touch_count).toBe(0);
    expect(after.next_check_at).not.toBeNull();
  });

  it('answers a reply in its thread: "Re: " + the subject, as a reply to the inbound message', async () => {
    const { actionId, person } = await drafted();
    const approved = await approve(actionId);
    await w.dispatcher.settle(await entryOf(actionId), 'accepted', { provider_message_id: 'nylas-first' });
    await eventually(async () => (await b.action(actionId)).status === 'executed');
    const subject = (approved.approved_payload as { subject: string }).subject;
    const inbound = await w.rpc.callUnchecked<{ message_id: string }>('messaging', MessagingRpc.InboundRecord, {
      organization_id: org,
      channel: 'email',
      from: person.email,
      external_id: 'nylas-reply-1',
      thread_id: 'thread-1',
      in_reply_to: 'nylas-first',
      headers: [],
      subject: `Re: ${subject}`,
      text: 'What does it cost per seat?\n\nOn Mon, Oct 27, 2026 Sales <sales@touchpoint.example> wrote:\n> Hi Sarah',
    });
    // The reply interrupt (seed 003 §4.7) bumps the enrollment and sends reply:{message_id} itself.
    await run(`reply:${inbound.message_id}`);

    const [decision] = await w.sql(`SELECT * FROM {o}.decisions WHERE trigger_event_id = $1`, [`reply:${inbound.message_id}`]);
    expect(decision).toMatchObject({ outcome: 'saved', type: 'email', reply_to_message_id: inbound.message_id, reply_to_text: expect.stringContaining('What does it cost per seat?') });
    const [reply] = await w.sql(`SELECT * FROM {o}.proposed_actions WHERE decision_id = $1`, [decision!.id]);
    expect(reply!.draft_payload.subject).toBeUndefined();
    await approve(reply!.id);

    const entry = await entryOf(reply!.id);
    expect(entry.payload).toMatchObject({ type: 'text', subject: `Re: ${subject}`, reply_to: 'nylas-reply-1' });
    const [message] = await w.sql(`SELECT * FROM "${w.world.schema('messaging')}".messages WHERE idempotency_key = $1`, [`outreach:${reply!.id}`]);
    expect(message).toMatchObject({ in_reply_to: 'nylas-reply-1', subject: `Re: ${subject}` });
    const prompt = (await w.model!.requests()).filter((r) => r.task === 'outreach_decide').at(-1)!.messages[1]!.content;
    expect(prompt).toContain('inbound: What does it cost per seat?');
    expect(prompt).not.toContain('Hi Sarah\n');
    expect(prompt).toContain('reason: reply_received');
  });

  it('shows one enrollment on its timeline: enrolled, decision, action, the thread email and ended, newest first', async () => {
    const { enrollmentId, actionId } = await drafted();
    await approve(actionId);
    await w.dispatcher.settle(await entryOf(actionId), 'accepted', { provider_message_id: 'nylas-tl' });
    await eventually(async () => (await b.action(actionId)).status === 'executed');
    await w.rpc.call('outreach', OutreachRpc.EnrollmentExit, { organization_id: org, enrollment_id: enrollmentId });

    const timeline = await w.rpc.callUnchecked<{ items: { id: string; kind: string; at: string | null; data: unknown }[]; missing: string[] }>('outreach', OutreachRpc.EnrollmentTimeline, { organization_id: org, enrollment_id: enrollmentId });

    expect(timeline.missing).toEqual([]);
    expect(timeline.items.map((i) => i.kind)).toEqual(['ended', 'action', 'email', 'decision', 'enrolled']);
    expect(timeline.items[0]!.data).toEqual({ ended_reason: 'user_exit' });
    expect(timeline.items.find((i) => i.kind === 'email')!.data).toMatchObject({ direction: 'outbound', status: 'sent' });
    const times = timeline.items.map((i) => ms(i.at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    const other = (await w.rpc.call('outreach', OutreachRpc.EnrollmentTimeline, { organization_id: 'another-org', enrollment_id: enrollmentId }).catch((e) => e)) as { code: string };
    expect(other.code).toBe('not_found');
  });
});
