import { Inject, Injectable } from '@nestjs/common';
import { DateTime } from 'luxon';
import type { FlowTemplateRef } from '@touchpoint/contracts';
import { APP_CONFIG } from '@touchpoint/runtime';
import { insideServiceWindow, nextSendOpening } from '@touchpoint/time';
import type { FollowupsConfig } from '../followups.config.js';
import type { ActionConfig } from '../graph/node-config.js';
import { SendersRepository } from '../senders/senders.repository.js';
import { anchorSkipReason } from './gates/anchor-grace.js';
import { recipientSendWindow } from './gates/recipient-window.js';
import { InFlightWindow } from './in-flight-window.js';
import { INSTANCE_UNAVAILABLE, NumberChain } from './number-chain.js';
import type { ReleaseContext } from './release-context.js';
import { ReleaseRepository } from './release.repository.js';

/** An unusable sending number is retried this much later, ms (seed 000 "retry 15 s"). */
export const SENDER_RETRY_MS = 15_000;
/** After this long without a usable number the enrollment is parked, ms (seed 000 "pause after 30 min"). */
export const SENDER_PARK_AFTER_MS = 30 * 60_000;
/** A send over the monthly quota waits this long, ms (seed 000 "Quota used up: deferred 30 min at a time"). */
export const QUOTA_RETRY_MS = 30 * 60_000;
/** The per-contact cap's window, ms (seed 000 "per-contact 24 h cap"); a capped send waits until its oldest send leaves it, plus 1 s. */
const CONTACT_CAP_WINDOW_MS = 24 * 3_600_000;

/** A send action (the configs that queue a message). */
export type SendActionConfig = Extract<ActionConfig, { mode: 'text' | 'template' | 'media' | 'ai' }>;

/**
 * Why a send may not go now, for the send step to apply (StepOutcomes):
 * - `skip`: the send is over without a message (`visit`: the visit may already hold an effect, see StepOutcomes.skipVisit);
 * - `defer`: try again at `at` (`plan`: shown as the step's schedule plan; `announce`: with a `deferred` timeline entry);
 * - `park`: the enrollment goes `dormente` with the reason.
 */
export type GateStop = { kind: 'skip'; reason: string; visit?: true } | { kind: 'defer'; at: Date; reason: string; plan: boolean; announce?: boolean } | { kind: 'park'; reason: string };

/** What WhatsApp's 24 h customer-service window leaves a send: a template (its own or its fallback), or free content (text, media, AI). */
export type ContentRoute = { kind: 'template'; template: FlowTemplateRef } | { kind: 'free' };

/**
 * The rules that decide whether a follow-up send goes now, in seed 000's order ("Release" → send):
 * `opening` (anchor past its grace → skip, send window → defer to its opening, consent → skip),
 * `contentRoute` (the 24-hour window: free text only inside it, else the template fallback or skip),
 * then, once the content is rendered and approved, `admit` (a usable number → else retry 15 s and
 * park after 30 min, the per-contact 24 h cap, per-number pacing, the in-flight window, the
 * monthly quota). Each answers a GateStop or lets the send through; the send step applies it, so a
 * rule change is tested here with fakes (see __tests__/send-gate.spec.ts).
 */
@Injectable()
export class SendGate {
  constructor(
    private readonly numbers: NumberChain,
    private readonly senders: SendersRepository,
    private readonly inFlight: InFlightWindow,
    private readonly release: ReleaseRepository,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
  ) {}

  /** Anchor grace, send window (the recipient's zone when the flow asks), consent. @returns the stop, or undefined to go on */
  opening(ctx: ReleaseContext, config: SendActionConfig): GateStop | undefined {
    const { state, contact, now, organization, version } = ctx;
    const anchorSkip = anchorSkipReason(config.anchor_grace_ms, state.anchor_at, now);
    if (anchorSkip) return { kind: 'skip', reason: anchorSkip, visit: true };
    const opening = nextSendOpening(now, recipientSendWindow(version.settings, organization, contact.time_zone));
    if (opening > now) return { kind: 'defer', at: opening, reason: 'send_window', plan: true };
    const purpose = version.settings.purpose ?? 'utility';
    const needsConsent = organization.consent_mode === 'all_opt_in' || (organization.consent_mode === 'marketing_opt_in' && purpose === 'marketing');
    if (needsConsent && !contact.tags.includes(organization.consent_tag)) return { kind: 'skip', reason: 'no_consent' };
    return undefined;
  }

  /** The 24-hour window (libs/time service-window) against the contact's last inbound message. */
  contentRoute(ctx: ReleaseContext, config: SendActionConfig): ContentRoute | GateStop {
    if (config.mode === 'template') return { kind: 'template', template: config.template };
    if (insideServiceWindow(ctx.contact.last_inbound_at, ctx.now)) return { kind: 'free' };
    // Free text cannot go outside the window, so an AI-written step does not ask the model either.
    if (!config.template_fallback) return { kind: 'skip', reason: 'outside_service_window' };
    return { kind: 'template', template: config.template_fallback };
  }

  /**
   * The number and the limits, last before the send is queued. Records on `ctx.state` since when no
   * number was usable (`sender_unavailable_since`). Takes one of the month's quota and moves the
   * number's pacing on (FOLLOWUP_SENDER_GAP_MS) only when it admits the send.
   * @returns the sending number, or the stop
   */
  async admit(ctx: ReleaseContext, nodeId: string): Promise<{ kind: 'admit'; senderId: string } | GateStop> {
    const { state, contact, now, organization, tx } = ctx;
    const senderId = await this.numbers.choose(tx, state.organization_id, { enrollmentSenderId: state.sender_id, flowSender: ctx.version.settings.sender, lastConversationSenderId: contact.last_sender_id });
    if (!senderId) {
      state.sender_unavailable_since ??= now;
      if (now.getTime() - state.sender_unavailable_since.getTime() >= SENDER_PARK_AFTER_MS) return { kind: 'park', reason: INSTANCE_UNAVAILABLE };
      return { kind: 'defer', at: new Date(now.getTime() + SENDER_RETRY_MS), reason: 'sender_unavailable', plan: false };
    }
    state.sender_unavailable_since = null;

    const recent = ctx.recentSends;
    if (recent.count >= organization.contact_daily_cap && recent.oldest) {
      return { kind: 'defer', at: new Date(recent.oldest.getTime() + CONTACT_CAP_WINDOW_MS + 1000), reason: 'contact_cap', plan: true };
    }

    const gap = this.config.FOLLOWUP_SENDER_GAP_MS;
    if (gap > 0) {
      const nextRelease = await this.senders.lockPacing(tx, senderId);
      if (nextRelease === 'busy') return { kind: 'defer', at: new Date(now.getTime() + gap), reason: 'pacing', plan: false };
      if (nextRelease > now) return { kind: 'defer', at: nextRelease, reason: 'pacing', plan: false };
    }
    const backlog = await this.inFlight.admit(tx, senderId, now, { enrollmentId: state.id, nodeId, step: state.step });
    if (backlog) return { kind: 'defer', at: backlog.at, reason: backlog.reason, plan: backlog.plan, announce: backlog.announce };
    if (organization.monthly_send_quota !== null) {
      const month = DateTime.fromJSDate(now, { zone: 'utc' }).toFormat('yyyy-MM-01');
      if (!(await this.release.takeMonthlySend(tx, state.organization_id, month, organization.monthly_send_quota))) {
        return { kind: 'defer', at: new Date(now.getTime() + QUOTA_RETRY_MS), reason: 'monthly_quota', plan: true };
      }
    }
    if (gap > 0) await this.senders.setPacing(tx, senderId, new Date(now.getTime() + gap));
    return { kind: 'admit', senderId };
  }
}
