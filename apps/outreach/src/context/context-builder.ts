import { Inject, Injectable } from '@nestjs/common';
import type { ContactView, LinkedinState, OutreachActionType, OutreachContextSections } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import type { CampaignRow } from '../campaigns/campaigns.repository.js';
import { DecisionsRepository, type DecisionRow } from '../decisions/decisions.repository.js';
import { channelValuesOf, type ChannelValue, includesValue, PeopleDirectory } from '../directory/people.directory.js';
import type { EnrollmentRow } from '../enrollments/enrollments.repository.js';
import type { OutreachConfig } from '../outreach.config.js';
import { type ActionRow, ActionsRepository } from '../review/actions.repository.js';
import { capSection, fieldLines, SECTION_CAPS, type SectionName, threadLine } from './context-render.js';
import { type OutreachThreads, ThreadReader } from './thread-reader.js';

/** What one decision run sees (seed 003 §4.2), saved as the build step's memo. */
export interface BuiltContext {
  sections: OutreachContextSections;
  /** Computed by code from its own reads (seed 003 §4.3 table). */
  allowed_actions: OutreachActionType[];
  /** True when no outbound action is possible and no invitation waits: no agent call. */
  needs_contact_data: boolean;
  linkedin_state: LinkedinState | 'unknown';
  /** The newest message of the enrollment's email threads, for the save of an email decision. */
  reply_to: { message_id: string; text: string | null; conversation_id: string | null; external_id: string | null; subject: string | null } | null;
  /** Whether an email would answer a thread (a reply has no subject). */
  has_email_thread: boolean;
}

/** Thrown by a section read that ran out of time. */
class SectionTimeout extends Error {}

/**
 * Builds the decision context of one enrollment (seed 003 §4.2): plain code, no model. The
 * enrollment, campaign and person are given (the gate read them and they are required); every
 * other read runs in parallel with its own deadline (OUTREACH_CONTEXT_READ_TIMEOUT_MS, 2 s) and,
 * when it fails, leaves its section empty and named in `missing`. Sections we do not have (signals,
 * dossier, knowledge search) are empty, never invented. Each section is cut by the one cap rule.
 * A failed suppression read closes every channel for the run and a failed LinkedIn read closes
 * LinkedIn (seed 003 §4.2); when that leaves no outbound action, `build` throws instead of
 * answering `needs_contact_data`.
 * @throws AppError service_unavailable (retryable) when no channel is open and a channel read failed
 * ai-gateway escapes every section, so no tenant text can open or close a tag.
 */
@Injectable()
export class ContextBuilder {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly decisions: DecisionsRepository,
    private readonly actions: ActionsRepository,
    private readonly threads: ThreadReader,
    private readonly people: PeopleDirectory,
    @Inject(APP_CONFIG) private readonly config: OutreachConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async build(enrollment: EnrollmentRow, campaign: CampaignRow, contact: ContactView): Promise<BuiltContext> {
    const timeout = this.config.OUTREACH_CONTEXT_READ_TIMEOUT_MS;
    const org = enrollment.organization_id;
    const linkedinAllowed = campaign.allowed_channels.includes('linkedin') && !!campaign.linkedin_sender_id;
    const [history, suppressed, linkedin] = await Promise.all([
      this.section(timeout, () => this.uow.run(async (tx) => ({ decisions: await this.decisions.ofEnrollment(tx, enrollment.id, 50), actions: await this.actions.ofEnrollment(tx, enrollment.id) }))),
      this.section(timeout, () => this.people.suppressed(org, channelValuesOf(contact, campaign.allowed_channels), timeout)),
      linkedinAllowed
        ? this.section(timeout, () => this.people.linkedin({ organization_id: org, sender_id: campaign.linkedin_sender_id!, linkedin_url: contact.linkedin_url, provider_id: contact.linkedin_provider_id }, timeout))
        : Promise.resolve({ ok: true as const, value: null }),
    ]);
    const thread = history.ok ? await this.section(timeout, () => this.threads.read(org, history.value.actions, timeout)) : { ok: false as const };

    const missing: SectionName[] = [];
    if (!history.ok) missing.push('history');
    if (!thread.ok) missing.push('thread');
    const threads: OutreachThreads = thread.ok ? thread.value : { email: [], linkedin: [] };

    // A failed suppression read suppresses every channel for this run; a failed LinkedIn read, LinkedIn.
    const suppressedValues: ChannelValue[] | 'all' = suppressed.ok ? suppressed.value : 'all';
    const linkedinView = linkedin.ok ? linkedin.value : null;
    const linkedinState: LinkedinState | 'unknown' = linkedinAllowed ? (linkedinView?.state ?? 'unknown') : 'none';
    const isSuppressed = (channel: 'email' | 'linkedin', ...values: (string | null)[]) => suppressedValues === 'all' || values.some((v) => includesValue(suppressedValues, channel, v));

    const allowed: OutreachActionType[] = [];
    if (campaign.allowed_channels.includes('email') && contact.email && !isSuppressed('email', contact.email)) allowed.push('email');
    const linkedinOpen = linkedinAllowed && linkedinView !== null && linkedinView.sender_connected && !isSuppressed('linkedin', contact.linkedin_provider_id, contact.linkedin_url);
    if (linkedinOpen && contact.linkedin_url && linkedinState === 'none') allowed.push('linkedin_connection');
    if (linkedinOpen && linkedinState === 'connected') allowed.push('linkedin_message');
    const outbound = allowed.length > 0;
    allowed.push('wait', 'stop');
    // An invitation that waits for an answer: the agent may wait or stop; the accept wakes it sooner.
    const noChannel = !outbound && linkedinState !== 'invited';
    // needs_contact_data waits for a person to add data (seed 003 §4.1), so it must mean "no channel
    // reaches them", never "a read failed": a failed read that left no outbound action fails the step
    // and the runner retries it, then its failure handler sets the next check (seed 003 §4.3).
    const unread = [...(suppressed.ok ? [] : ['suppressions']), ...(linkedinAllowed && linkedinView === null ? ['linkedin'] : [])];
    if (noChannel && unread.length > 0) {
      this.logger.warn({ event: 'outreach.context_channels_unknown', organization_id: org, enrollment_id: enrollment.id, unread }, 'no channel open and a channel read failed: retrying, not parking the enrollment');
      throw new AppError(ErrorCode.ServiceUnavailable, `cannot tell whether a channel reaches the person: the ${unread.join(' and ')} read failed`);
    }
    const needsContactData = noChannel;

    const newestEmail = threads.email[0] ?? null;
    const sections: OutreachContextSections = {
      campaign: capSection(
        fieldLines({
          name: campaign.name,
          goal: campaign.goal,
          allowed_channels: campaign.allowed_channels,
          touches_so_far: `${enrollment.touch_count} of ${campaign.max_touches}`,
          followup_days: `${campaign.followup_min_days} to ${campaign.followup_max_days}`,
          linkedin_state: linkedinAllowed ? linkedinState : undefined,
        }),
        SECTION_CAPS.campaign,
      ),
      person: capSection(personLines(contact), SECTION_CAPS.person),
      company: capSection(companyLines(contact), SECTION_CAPS.company),
      signals: '',
      thread: capSection(threadOf(threads), SECTION_CAPS.thread),
      history: history.ok ? capSection(historyLines(history.value.decisions, history.value.actions), SECTION_CAPS.history) : '',
      dossier: '',
      knowledge: '',
      ...(missing.length ? { missing } : {}),
    };
    if (missing.length) this.logger.warn({ event: 'outreach.context_section_missing', organization_id: org, enrollment_id: enrollment.id, missing }, 'context built with missing sections');
    return {
      sections,
      allowed_actions: allowed,
      needs_contact_data: needsContactData,
      linkedin_state: linkedinState,
      reply_to: newestEmail
        ? {
            message_id: newestEmail.id,
            text: newestEmail.direction === 'inbound' ? newestEmail.body : null,
            conversation_id: newestEmail.conversation_id,
            external_id: newestEmail.external_id,
            subject: newestEmail.subject,
          }
        : null,
      has_email_thread: newestEmail !== null,
    };
  }

  /** Runs one read with its deadline; a failure or timeout is `{ ok: false }`. */
  private async section<T>(timeoutMs: number, read: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const value = await Promise.race([read(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new SectionTimeout('section read timed out')), timeoutMs)))]);
      return { ok: true, value };
    } catch (err) {
      this.logger.debug({ event: 'outreach.context_read_failed', err: (err as Error).message }, 'context read failed');
      return { ok: false };
    } finally {
      clearTimeout(timer);
    }
  }
}

function personLines(c: ContactView): string[] {
  const { company: _company, ...facts } = c.custom_fields ?? {};
  return fieldLines({ name: c.name, kind: c.kind, email: c.email, linkedin: c.linkedin_url, time_zone: c.time_zone, tags: c.tags, ...facts });
}

function companyLines(c: ContactView): string[] {
  const company = c.custom_fields?.company;
  return company === undefined || company === null ? [] : fieldLines({ name: company });
}

/** Email and LinkedIn lines together, newest first: the newest reply leads, so a cut drops the oldest. */
function threadOf(threads: OutreachThreads): string[] {
  const all = [...threads.email.map((m) => ({ m, channel: 'email' })), ...threads.linkedin.map((m) => ({ m, channel: 'linkedin' }))];
  all.sort((a, b) => Date.parse(b.m.created_at) - Date.parse(a.m.created_at));
  return all.map(({ m, channel }) => threadLine(channel, m.created_at, m.direction, m.body, m.subject));
}

/** Earlier decisions and actions, newest first, with every reject reason (the agent must not repeat). */
function historyLines(decisions: DecisionRow[], actions: ActionRow[]): string[] {
  const items: { at: Date; line: string }[] = [];
  for (const d of decisions) {
    const detail = d.outcome === 'saved' ? (d.rationale ?? '') : `${d.outcome}${d.failure_reason ? ` (${d.failure_reason})` : ''}`;
    items.push({ at: d.created_at, line: `${d.created_at.toISOString().slice(0, 10)} decision ${d.type ?? '-'} [${d.trigger_reason}]: ${detail}` });
  }
  for (const a of actions) {
    const extra = a.status === 'rejected' ? ` reject_reason: ${a.reject_reason ?? '-'} (then ${a.reject_then})` : a.outcome_unknown ? ' outcome unknown' : '';
    items.push({ at: a.updated_at, line: `${a.updated_at.toISOString().slice(0, 10)} action ${a.type} ${a.status}${extra}` });
  }
  items.sort((x, y) => y.at.getTime() - x.at.getTime());
  return items.map((i) => i.line);
}
