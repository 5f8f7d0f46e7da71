import type { DemoContext } from './demo-context.js';
import { expectStatus, waitFor } from './http-clients.js';

/** How far the outreach scenario got, and why it stopped there. */
export interface OutreachResult {
  contactId: string;
  campaignId: string;
  enrollmentId: string;
  actionId?: string;
  /** The enrollment and its action as the API shows them at the end. */
  enrollment: Record<string, any>;
  /** The timeline kinds, oldest first. */
  timeline: string[];
  /** Whether an email reached the sandbox's Nylas. */
  emailSent: boolean;
  /** The step a missing dependency stopped the scenario at, when it did. */
  stoppedAt?: 'enroll';
}

/**
 * Outreach (seed 003): a campaign on email, a CRM person enrolled, the first decision and its
 * draft written by the sandbox model, the draft approved from the review queue, then the send.
 * What the platform cannot do yet is printed as such (no email mailbox can be connected through
 * the API until the Nylas adapter lands), never simulated. To extend: once `POST /senders`
 * accepts an email mailbox, create it in `connectMailbox` and the rest (reply interrupt,
 * opt-out) follows the same pattern as the WhatsApp scenarios, through `/sandbox/nylas`.
 */
export async function outreachScenario(ctx: DemoContext): Promise<OutreachResult> {
  const section = 'outreach';
  const created = await ctx.gateway.post('/contacts', { kind: 'crm', name: 'Dana Prospect', email: 'dana@prospect.example' });
  // A second run finds the person from the first (409 names them).
  const contactId: string = created.status === 409 && created.body?.error?.details?.contact_id ? created.body.error.details.contact_id : expectStatus('POST /contacts', created, 200, 201).contact_id;
  ctx.say(section, `person ${contactId} (crm, dana@prospect.example) created`);
  const mailbox = await connectMailbox(ctx);
  const campaign = expectStatus(
    'POST /agentic/outreach/campaigns',
    await ctx.gateway.post('/agentic/outreach/campaigns', {
      name: 'Demo: reativar clientes',
      goal: 'Book a 20-minute call to present the new plan',
      allowed_channels: ['email'],
      max_touches: 3,
      followup_min_days: 2,
      followup_max_days: 5,
      ...(mailbox ? { email_sender_id: mailbox } : {}),
    }),
    200,
    201,
  );
  ctx.say(section, `campaign ${campaign.campaign_id} "${campaign.name}": ${campaign.status}, channels ${campaign.allowed_channels.join(',')}`);
  const enrolling = await ctx.gateway.post(`/agentic/outreach/campaigns/${campaign.campaign_id}/enrollments`, { person_kind: 'crm', person_id: contactId });
  if (enrolling.status === 503) {
    // A dependency of enrollment is not in this build yet (e.g. the dispatcher's suppression list): say so.
    ctx.say(section, `enrolling person ${contactId} answered 503 ${enrolling.body?.error?.code}: "${enrolling.body?.error?.message}". This build cannot run outreach further; the decision, draft, approval and email are not shown.`);
    return { contactId, campaignId: campaign.campaign_id, enrollmentId: '', enrollment: {}, timeline: [], emailSent: false, stoppedAt: 'enroll' };
  }
  const enrolled = expectStatus('enroll', enrolling, 200, 201);
  const enrollmentId: string = enrolled.enrollment_id ?? enrolled.enrollment?.enrollment_id;
  ctx.say(section, `enrollment ${enrollmentId}: ${enrolled.status ?? enrolled.enrollment?.status}; the first decision is requested`);

  const action = await waitFor('a draft in the review queue', async () => {
    const queue = expectStatus('GET /agentic/outreach/actions', await ctx.gateway.get('/agentic/outreach/actions?limit=200'), 200);
    return (queue.items as Array<Record<string, any>>).find((a) => a.enrollment_id === enrollmentId);
  }, ctx.stepTimeoutMs * 2).catch(() => undefined);
  let timeline = await timelineKinds(ctx, enrollmentId);
  if (!action) {
    const e = expectStatus('GET enrollment', await ctx.gateway.get(`/agentic/outreach/enrollments/${enrollmentId}`), 200);
    ctx.say(section, `no draft reached the review queue yet (enrollment ${e.status}${e.ended_reason ? `, ${e.ended_reason}` : ''}; timeline: ${timeline.join(', ') || 'empty'})`);
    return { contactId, campaignId: campaign.campaign_id, enrollmentId, enrollment: e, timeline, emailSent: false };
  }
  ctx.say(section, `the sandbox model decided: ${action.type} (${timeline.filter((k) => k.includes('decision')).join(', ') || 'decision'}); draft ${action.action_id} awaiting approval, subject "${action.payload?.subject ?? ''}"`);
  const approved = await ctx.gateway.post(`/agentic/outreach/actions/${action.action_id}/approve`, {});
  ctx.say(section, approved.status < 300 ? `draft ${action.action_id} approved: ${approved.body.status ?? 'approved'}` : `approve answered HTTP ${approved.status} ${approved.body?.error?.code ?? ''}: ${approved.body?.error?.message ?? ''}`);

  const emailSent = await waitFor('the email at the sandbox Nylas', async () => (await ctx.sandbox.received('nylas')).some((c) => JSON.stringify(c.body).includes('dana@prospect.example')), mailbox ? ctx.stepTimeoutMs : 4000).catch(() => false);
  timeline = await timelineKinds(ctx, enrollmentId);
  const e = expectStatus('GET enrollment', await ctx.gateway.get(`/agentic/outreach/enrollments/${enrollmentId}`), 200);
  if (emailSent) ctx.say(section, `email to dana@prospect.example accepted by the sandbox's Nylas; enrollment ${enrollmentId} ${e.status}, ${e.touch_count} touch(es)`);
  else
    ctx.say(
      section,
      `not sent: no email mailbox can be connected through the API in this version (the Nylas adapter is not in yet), so the approved draft stays with enrollment ${enrollmentId} (${e.status}; timeline: ${timeline.join(', ')}). The reply interrupt and the opt-out need that send; they are not shown.`,
    );
  return { contactId, campaignId: campaign.campaign_id, enrollmentId, actionId: action.action_id, enrollment: e, timeline, emailSent };
}

/** The organization's email mailbox, when the API can connect one (not yet: undefined). */
async function connectMailbox(ctx: DemoContext): Promise<string | undefined> {
  const listed = await ctx.gateway.get('/senders?channel=email');
  const existing = listed.status === 200 ? (listed.body.items as Array<{ sender_id: string; status: string }>).find((s) => s.status === 'connected') : undefined;
  return existing?.sender_id;
}

async function timelineKinds(ctx: DemoContext, enrollmentId: string): Promise<string[]> {
  const answer = await ctx.gateway.get(`/agentic/outreach/enrollments/${enrollmentId}/timeline`);
  if (answer.status !== 200) return [];
  const items = (answer.body.items ?? []) as Array<{ kind: string }>;
  return items.map((i) => i.kind).reverse();
}
