import { randomUUID } from 'node:crypto';
import { type EmailSuppressionResult, OutreachSuppressionRpc } from '@touchpoint/contracts';
import { eventually } from '@touchpoint/testing';
import { OptOutService } from '../../apps/outreach/src/interrupts/opt-out.service.js';
import { DueSweepService } from '../../apps/outreach/src/sweep/sweep.service.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/**
 * Nylas `bounce_detected` and the unsubscribe link as outreach applies them (seed 003 §4.7, "Opt-out
 * and bounce"), with the real decision runner and the sandbox model.
 */
describe(OptOutService.name, () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  const org = `org-${randomUUID()}`;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_bounce', { model: true, outreachEnv: { OUTREACH_SWEEP_INTERVAL_MS: '0' } });
    b = outreachBuilders(w);
  });
  afterAll(() => w.close());

  const run = (key: string) => eventually(async () => (await w.sql(`SELECT * FROM {o}.workflow_runs WHERE run_key = $1 AND status IN ('done', 'failed')`, [key]))[0], 20_000);
  const decisionEvents = (enrollmentId: string) => w.sql(`SELECT event_id FROM {o}.outbox_events WHERE type = 'outreach.decision.requested' AND payload->'data'->>'enrollment_id' = $1 ORDER BY id`, [enrollmentId]);

  it('a bounce closes email and a LinkedIn-allowed campaign continues on LinkedIn', async () => {
    const linkedinSender = w.dispatcher.addSender(org, 'linkedin');
    const campaign = await b.campaign(org, { allowed_channels: ['email', 'linkedin'], linkedin_sender_id: linkedinSender });
    const { enrollmentId, person } = await b.enrollment(org, campaign.id, { linkedin_url: `https://www.linkedin.com/in/sarah-${randomUUID().slice(0, 6)}` });
    await run(`enrolled:${enrollmentId}`);
    const [emailDraft] = await w.sql(`SELECT * FROM {o}.proposed_actions WHERE enrollment_id = $1 AND status = 'pending_approval'`, [enrollmentId]);
    expect(emailDraft).toMatchObject({ type: 'email' });
    const before = await b.enrollmentRow(enrollmentId);

    const result = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailBounce, { organization_id: org, emails: [person.email!.toUpperCase()], provider_message_id: `nylas-${randomUUID()}` });

    expect(result).toEqual({ suppressed: [{ channel: 'email', value: person.email!.toLowerCase() }], enrollment_ids: [enrollmentId] });
    await eventually(() => w.dispatcher.suppressCommands.find((c) => c.organization_id === org && c.value === person.email!.toLowerCase()));
    expect(w.dispatcher.suppressCommands.find((c) => c.value === person.email!.toLowerCase())).toMatchObject({ channel: 'email', reason: 'bounced' });
    const after = await b.enrollmentRow(enrollmentId);
    expect(after).toMatchObject({ status: 'active', context_version: before.context_version + 1 });
    expect(new Date(after.next_check_at).getTime()).toBeLessThanOrEqual(Date.now());
    expect(await b.action(emailDraft!.id)).toMatchObject({ status: 'invalidated', invalidated_reason: 'bounced' });
    // No event: the sweep asks.
    expect((await decisionEvents(enrollmentId)).map((e) => e.event_id)).toEqual([`enrolled:${enrollmentId}`]);

    await w.model!.reset();
    await w.model!.script([{ reply: { type: 'linkedin_connection', rationale: 'The email bounced; LinkedIn is open.', objective: 'Connect and introduce the chairs.', goal_met: false, suggested_followup_days: 3 } }]);
    await w.outreach.get(DueSweepService).runOnce();
    const dueId = `due:${enrollmentId}:${new Date(after.next_check_at).toISOString()}`;
    await run(dueId);

    const [decide] = await w.model!.requests();
    const user = decide!.messages[1]!.content;
    expect(user).toContain('reason: followup_due');
    expect(user).toContain('linkedin_connection, wait, stop');
    expect(user).not.toMatch(/allowed_actions>\s*email/);
    const [linkedinDraft] = await w.sql(`SELECT * FROM {o}.proposed_actions WHERE enrollment_id = $1 AND status = 'pending_approval'`, [enrollmentId]);
    expect(linkedinDraft).toMatchObject({ type: 'linkedin_connection' });
    expect(linkedinDraft!.draft_payload.note).toEqual(expect.any(String));
  }, 60_000);

  it('the unsubscribe link suppresses the email only and ends every live enrollment with that address opted_out', async () => {
    const campaign = await b.campaign(org);
    const { enrollmentId, person } = await b.enrollment(org, campaign.id, { linkedin_provider_id: `ACo${randomUUID().slice(0, 6)}` });
    await run(`enrolled:${enrollmentId}`);
    const result = await w.rpc.callUnchecked<EmailSuppressionResult>('outreach', OutreachSuppressionRpc.EmailUnsubscribe, { organization_id: org, email: person.email });
    expect(result).toEqual({ suppressed: [{ channel: 'email', value: person.email!.toLowerCase() }], enrollment_ids: [enrollmentId] });
    expect(await b.enrollmentRow(enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'opted_out' });
    const [draft] = await w.sql(`SELECT * FROM {o}.proposed_actions WHERE enrollment_id = $1`, [enrollmentId]);
    expect(draft).toMatchObject({ status: 'invalidated', invalidated_reason: 'opted_out' });
    await eventually(() => w.dispatcher.suppressCommands.find((c) => c.value === person.email!.toLowerCase()));
    expect(w.dispatcher.suppressCommands.filter((c) => c.value === person.linkedin_provider_id)).toEqual([]);
  }, 30_000);
});
