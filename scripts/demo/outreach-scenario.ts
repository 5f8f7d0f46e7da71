import { type DemoContext, DEMO_MAILBOX_LABEL, teachSandboxGrant } from './demo-context.js';
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
  /** Whether the person's opt-out reply ended the enrollment as `opted_out`. */
  optedOut?: boolean;
  /** The step a missing dependency stopped the scenario at, when it did. */
  stoppedAt?: 'enroll';
  /** The second person's draft, left pending in the review queue for the console (see `leaveDraftPending`). */
  pending?: PendingDraft;
}

/** The draft the demo leaves waiting for a person to approve in the console. */
export interface PendingDraft {
  contactId: string;
  enrollmentId: string;
  /** Undefined when no draft reached the review queue in time. */
  actionId?: string;
}

/**
 * Outreach (seed 003): a campaign on email, a CRM person enrolled, the first decision and its
 * draft written by the sandbox model, the draft approved from the review queue, then the send.
 * The mailbox is a grant of the sandbox's Nylas, connected through `POST /senders/accounts`
 * (`connectMailbox`), so the approved email reaches the sandbox's Nylas. What the platform cannot
 * do is printed as such, never simulated.
 */
export async function outreachScenario(ctx: DemoContext): Promise<OutreachResult> {
  const section = 'outreach';
  const email = `dana.${ctx.runTag}@prospect.example`;
  const created = await ctx.gateway.post('/contacts', { kind: 'crm', name: 'Dana Prospect', email });
  const contactId: string = created.status === 409 && created.body?.error?.details?.contact_id ? created.body.error.details.contact_id : expectStatus('POST /contacts', created, 200, 201).id;
  ctx.say(section, `person ${contactId} (crm, ${email}) created`);
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
  ctx.say(section, `campaign ${campaign.id} "${campaign.name}": ${campaign.status}, channels ${campaign.allowed_channels.join(',')}`);
  const enrolling = await ctx.gateway.post(`/agentic/outreach/campaigns/${campaign.id}/enrollments`, { person_kind: 'crm', person_id: contactId });
  if (enrolling.status === 503) {
    // A dependency of enrollment is not in this build yet (e.g. the dispatcher's suppression list): say so.
    ctx.say(section, `enrolling person ${contactId} answered 503 ${enrolling.body?.error?.code}: "${enrolling.body?.error?.message}". This build cannot run outreach further; the decision, draft, approval and email are not shown.`);
    return { contactId, campaignId: campaign.id, enrollmentId: '', enrollment: {}, timeline: [], emailSent: false, stoppedAt: 'enroll' };
  }
  const enrolled = expectStatus('enroll', enrolling, 200, 201);
  const enrollmentId: string = enrolled.id;
  ctx.say(section, `enrollment ${enrollmentId}: ${enrolled.status ?? enrolled.enrollment?.status}; the first decision is requested`);

  const action = await waitFor(
    'a draft in the review queue',
    async () => {
      const queue = expectStatus('GET /agentic/outreach/actions', await ctx.gateway.get('/agentic/outreach/actions?limit=200'), 200);
      return (queue.items as Array<Record<string, any>>).find((a) => a.enrollment_id === enrollmentId);
    },
    ctx.stepTimeoutMs * 2,
  ).catch(() => undefined);
  let timeline = await timelineKinds(ctx, enrollmentId);
  if (!action) {
    const e = expectStatus('GET enrollment', await ctx.gateway.get(`/agentic/outreach/enrollments/${enrollmentId}`), 200);
    ctx.say(section, `no draft reached the review queue yet (enrollment ${e.status}${e.ended_reason ? `, ${e.ended_reason}` : ''}; timeline: ${timeline.join(', ') || 'empty'})`);
    return { contactId, campaignId: campaign.id, enrollmentId, enrollment: e, timeline, emailSent: false };
  }
  const items = await timelineItems(ctx, enrollmentId);
  const decision = items.find((i) => i.kind === 'decision')?.data ?? {};
  const drafted = items.find((i) => i.kind === 'action' && i.id === action.id)?.data ?? {};
  ctx.say(section, `the sandbox model decided ${decision.type ?? action.type} (${decision.trigger_reason ?? 'enrolled'}): "${decision.objective ?? ''}", next check in ${decision.followup_days ?? '?'} days`);
  ctx.say(section, `draft ${action.id} awaiting approval: subject "${drafted.draft?.subject ?? ''}"`);
  const approved = await ctx.gateway.post(`/agentic/outreach/actions/${action.id}/approve`, {});
  ctx.say(section, approved.status < 300 ? `draft ${action.id} approved by the demo admin: ${approved.body.status ?? 'approved'}` : `approve answered HTTP ${approved.status} ${approved.body?.error?.code ?? ''}: ${approved.body?.error?.message ?? ''}`);

  const emailSent = await waitFor('the email at the sandbox Nylas', async () => (await ctx.sandbox.received('nylas')).some((c) => JSON.stringify(c.body).includes(email)), mailbox ? ctx.stepTimeoutMs : 5000).catch(() => false);
  timeline = await timelineKinds(ctx, enrollmentId);
  const e = expectStatus('GET enrollment', await ctx.gateway.get(`/agentic/outreach/enrollments/${enrollmentId}`), 200);
  const after = (await timelineItems(ctx, enrollmentId)).find((i) => i.kind === 'action' && i.id === action.id)?.data ?? {};
  if (emailSent) {
    ctx.say(section, `email to ${email} accepted by the sandbox's Nylas; action ${action.id} ${after.status}; enrollment ${enrollmentId} ${e.status}, ${e.touch_count} touch(es)`);
    const replied = await replyAndOptOut(ctx, { email, enrollmentId, grantId: `demo-grant-${ctx.organizationId}` }).catch((err: Error) => {
      ctx.say(section, `reply and opt-out not shown: ${err.message}`);
      return undefined;
    });
    const final = expectStatus('GET enrollment', await ctx.gateway.get(`/agentic/outreach/enrollments/${enrollmentId}`), 200);
    const timelineAfter = await timelineKinds(ctx, enrollmentId);
    const pending = await leaveDraftPending(ctx, campaign.id);
    return { contactId, campaignId: campaign.id, enrollmentId, actionId: action.id, enrollment: final, timeline: timelineAfter, emailSent, optedOut: replied?.optedOut ?? false, pending };
  } else
    ctx.say(
      section,
      `not sent${mailbox ? '' : ' (no email mailbox could be connected)'}: action ${action.id} is ${after.status ?? '?'}${after.failure_reason ? ` (${after.failure_reason})` : ''}; enrollment ${enrollmentId} ${e.status}. The reply interrupt and the opt-out need a sent email; they are not shown.`,
    );
  const pending = await leaveDraftPending(ctx, campaign.id);
  return { contactId, campaignId: campaign.id, enrollmentId, actionId: action.id, enrollment: e, timeline, emailSent, pending };
}

/**
 * Enrolls a second person in the campaign and waits (two step timeouts at most) until the sandbox
 * model's draft for them is in the review queue, then leaves it there: the operator console's
 * Review page shows it to whoever signs in after the demo, to approve or reject.
 * @returns the person, the enrollment and, when it arrived in time, the pending draft's action id
 * @throws DemoStepError when the person cannot be created or enrolled
 */
async function leaveDraftPending(ctx: DemoContext, campaignId: string): Promise<PendingDraft> {
  const section = 'outreach';
  const email = `rui.${ctx.runTag}@prospect.example`;
  const created = await ctx.gateway.post('/contacts', { kind: 'crm', name: 'Rui Prospect', email });
  const contactId: string = created.status === 409 && created.body?.error?.details?.contact_id ? created.body.error.details.contact_id : expectStatus('POST /contacts', created, 200, 201).id;
  const enrolled = expectStatus('enroll', await ctx.gateway.post(`/agentic/outreach/campaigns/${campaignId}/enrollments`, { person_kind: 'crm', person_id: contactId }), 200, 201);
  const enrollmentId: string = enrolled.id;
  ctx.say(section, `person ${contactId} (crm, ${email}) enrolled too: enrollment ${enrollmentId}; its draft is left for you to review`);
  const waitMs = ctx.stepTimeoutMs * 2;
  const action = await waitFor(
    `the draft of enrollment ${enrollmentId} in the review queue`,
    async () => {
      const queue = expectStatus('GET /agentic/outreach/actions', await ctx.gateway.get('/agentic/outreach/actions?limit=200'), 200);
      return (queue.items as Array<Record<string, any>>).find((a) => a.enrollment_id === enrollmentId);
    },
    waitMs,
  ).catch(() => undefined);
  if (!action) {
    ctx.say(section, `no draft for enrollment ${enrollmentId} reached the review queue within ${Math.round(waitMs / 1000)} s; the console's Review page shows it once it does`);
    return { contactId, enrollmentId };
  }
  const drafted = (await timelineItems(ctx, enrollmentId)).find((i) => i.kind === 'action' && i.id === action.id)?.data ?? {};
  ctx.say(section, `draft ${action.id} for ${email} is pending in the review queue (subject "${drafted.draft?.subject ?? ''}"): approve or reject it in the operator console`);
  return { contactId, enrollmentId, actionId: action.id };
}

/**
 * The organization's email mailbox: the connected one if there is, else one connected now through
 * `POST /senders/accounts` as a grant of the sandbox's Nylas (one per organization, kept by later runs).
 */
async function connectMailbox(ctx: DemoContext): Promise<string | undefined> {
  const listed = await ctx.gateway.get('/senders?channel=email');
  const existing = listed.status === 200 ? (listed.body.items as Array<{ id: string; status: string }>).find((s) => s.status === 'connected') : undefined;
  if (existing) return existing.id;
  // The grant lives at the sandbox's Nylas; the API key it is given is what proves the mailbox is ours.
  await teachSandboxGrant(ctx);
  const created = await ctx.gateway.post('/senders/accounts', {
    channel: 'email',
    account_id: `demo-grant-${ctx.organizationId}`,
    address: 'sales@touchpoint-demo.example',
    api_key: 'sandbox-nylas-api-key',
    provider: 'google',
    label: DEMO_MAILBOX_LABEL,
  });
  if (created.status !== 201 && created.status !== 200) {
    ctx.say('outreach', `connecting a mailbox answered HTTP ${created.status} ${created.body?.error?.code ?? ''}: ${created.body?.error?.message ?? ''}`);
    return undefined;
  }
  ctx.say('outreach', `mailbox ${created.body.id} (${created.body.address ?? 'sales@touchpoint-demo.example'}, sandbox Nylas grant) connected`);
  return created.body.id;
}

/**
 * The person answers the email through the sandbox's Nylas (a signed `message.created` to the
 * gateway): the reply interrupts the enrollment; then a second answer, "Please unsubscribe me",
 * is an opt-out that ends the enrollment and suppresses the address.
 */
async function replyAndOptOut(ctx: DemoContext, p: { email: string; enrollmentId: string; grantId: string }): Promise<{ optedOut: boolean }> {
  const section = 'outreach';
  const sent = (await ctx.sandbox.received('nylas')).find((c) => JSON.stringify(c.body).includes(p.email));
  const answer = await ctx.sandbox.request('POST', '/sandbox/nylas/inbound', {
    grant_id: p.grantId,
    from: p.email,
    from_name: 'Dana Prospect',
    body: 'Thanks! What would the new plan cost for a team of ten?',
    ...(sent?.provider_id ? { reply_to_message_id: sent.provider_id } : {}),
  });
  if (answer.status >= 300) throw new Error(`the sandbox refused the reply (HTTP ${answer.status})`);
  await waitFor('the reply on the enrollment timeline', async () => (await timelineItems(ctx, p.enrollmentId)).some((i) => i.kind === 'email' && i.data.direction === 'inbound'), ctx.stepTimeoutMs);
  const interrupted = expectStatus('GET enrollment', await ctx.gateway.get(`/agentic/outreach/enrollments/${p.enrollmentId}`), 200);
  ctx.say(section, `Dana replied by email (signed Nylas webhook): the reply interrupts enrollment ${p.enrollmentId} (${interrupted.status}); a new decision is requested with the reply as its trigger`);

  const optOut = await ctx.sandbox.request('POST', '/sandbox/nylas/inbound', {
    grant_id: p.grantId,
    from: p.email,
    from_name: 'Dana Prospect',
    body: 'Please unsubscribe me from this.',
    ...(sent?.provider_id ? { reply_to_message_id: sent.provider_id } : {}),
  });
  if (optOut.status >= 300) throw new Error(`the sandbox refused the opt-out (HTTP ${optOut.status})`);
  const ended = await waitFor(
    'the enrollment ended by the opt-out',
    async () => {
      const en = expectStatus('GET enrollment', await ctx.gateway.get(`/agentic/outreach/enrollments/${p.enrollmentId}`), 200);
      return en.status === 'ended' ? en : undefined;
    },
    ctx.stepTimeoutMs,
  );
  ctx.say(section, `"Please unsubscribe me from this." is an opt-out: enrollment ${p.enrollmentId} ${ended.status} (${ended.ended_reason}); ${p.email} is suppressed on email`);
  return { optedOut: ended.ended_reason === 'opted_out' };
}

/** The enrollment's timeline, newest first (`GET .../timeline`); empty when it cannot be read. */
async function timelineItems(ctx: DemoContext, enrollmentId: string): Promise<Array<{ id: string; kind: string; data: Record<string, any> }>> {
  const answer = await ctx.gateway.get(`/agentic/outreach/enrollments/${enrollmentId}/timeline`);
  return answer.status === 200 ? (answer.body.items ?? []) : [];
}

async function timelineKinds(ctx: DemoContext, enrollmentId: string): Promise<string[]> {
  return (await timelineItems(ctx, enrollmentId)).map((i) => i.kind).reverse();
}
