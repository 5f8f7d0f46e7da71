import { jest } from '@jest/globals';
import type { FlowSettings, FollowupSettingsView } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { ContactActivity } from '../../contacts/contacts.repository.js';
import type { EnrollmentRow } from '../../enrollments/enrollment-row.js';
import type { FollowupsConfig } from '../../followups.config.js';
import type { SendersRepository } from '../../senders/senders.repository.js';
import type { InFlightDeferral, InFlightWindow } from '../in-flight-window.js';
import { INSTANCE_UNAVAILABLE, type NumberChain } from '../number-chain.js';
import type { ReleaseContext } from '../release-context.js';
import type { ReleaseRepository } from '../release.repository.js';
import { type GateStop, QUOTA_RETRY_MS, SENDER_PARK_AFTER_MS, SENDER_RETRY_MS, SendGate, type SendActionConfig } from '../send-gate.js';

/** Tuesday 15:00 UTC: inside the default 08–20 UTC window. */
const NOW = new Date('2026-03-10T15:00:00.000Z');
const HOUR = 3_600_000;
const GAP_MS = 250;
const SENDER = 'sender-1';

const text: SendActionConfig = { mode: 'text', body: 'Hello' };
const fallback = { name: 'reminder', language: 'pt_BR' };

interface Overrides {
  now?: Date;
  state?: Partial<EnrollmentRow>;
  contact?: Partial<ContactActivity>;
  settings?: Partial<FlowSettings>;
  organization?: Partial<FollowupSettingsView>;
  recentSends?: ReleaseContext['recentSends'];
}

/** One step's working state, as the node interpreter builds it, with sensible defaults. */
function aContext(o: Overrides = {}): ReleaseContext {
  const now = o.now ?? NOW;
  return {
    tx: {} as Tx,
    now,
    state: { id: 'enr-1', organization_id: 'org-1', contact_id: 'c-1', flow_id: 'flow-1', step: 3, anchor_at: null, sender_id: null, sender_unavailable_since: null, ...o.state } as EnrollmentRow,
    contact: { organization_id: 'org-1', contact_id: 'c-1', tags: [], time_zone: null, last_inbound_at: new Date(now.getTime() - HOUR), last_sender_id: null, ...o.contact } as ContactActivity,
    version: { id: 'v-1', flowId: 'flow-1', graph: {} as ReleaseContext['version']['graph'], settings: { trigger: { kind: 'manual', cancel_on_reply: false }, handoff_policy: 'continue', ...o.settings } as FlowSettings },
    organization: {
      send_window: { start_hour: 8, end_hour: 20, days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' },
      contact_daily_cap: 3,
      monthly_send_quota: null,
      consent_mode: 'none',
      consent_tag: 'opt_in',
      followups_enabled: true,
      ...o.organization,
    } as FollowupSettingsView,
    events: [],
    messages: [],
    effects: [],
    recentSends: o.recentSends ?? { count: 0, oldest: null },
    sent: false,
  };
}

/** The gate with fakes for its repositories: by default a connected number, no pacing wait, room in the window and the quota. */
function aGate(o: { sender?: string | undefined; pacing?: Date | 'busy'; backlog?: InFlightDeferral; quotaLeft?: boolean; gapMs?: number } = {}) {
  const numbers = { choose: jest.fn(async () => ('sender' in o ? o.sender : SENDER)) };
  const senders = { lockPacing: jest.fn(async () => o.pacing ?? new Date(NOW.getTime() - 1000)), setPacing: jest.fn(async () => undefined) };
  const inFlight = { admit: jest.fn(async () => o.backlog) };
  const release = { takeMonthlySend: jest.fn(async () => o.quotaLeft ?? true) };
  const config = { FOLLOWUP_SENDER_GAP_MS: o.gapMs ?? GAP_MS } as FollowupsConfig;
  const sut = new SendGate(numbers as unknown as NumberChain, senders as unknown as SendersRepository, inFlight as unknown as InFlightWindow, release as unknown as ReleaseRepository, config);
  return { sut, numbers, senders, inFlight, release };
}

describe(SendGate.name, () => {
  describe('opening', () => {
    it.each<[string, Overrides, SendActionConfig, GateStop | undefined]>([
      ['lets a send through inside the window with no consent rule', {}, text, undefined],
      ['defers to the opening before the window (send_window, shown as a plan)', { now: new Date('2026-03-10T03:00:00Z') }, text, { kind: 'defer', at: new Date('2026-03-10T08:00:00Z'), reason: 'send_window', plan: true }],
      ['defers past a day the window does not open on', { organization: { send_window: { start_hour: 8, end_hour: 20, days: [1], timezone: 'UTC' } } }, text, { kind: 'defer', at: new Date('2026-03-16T08:00:00Z'), reason: 'send_window', plan: true }],
      ['reads the window on the contact clock when the flow asks (15:00 UTC is midnight in Tokyo)', { settings: { timezone_mode: 'contact' }, contact: { time_zone: 'Asia/Tokyo' } }, text, { kind: 'defer', at: new Date('2026-03-10T23:00:00Z'), reason: 'send_window', plan: true }],
      ['keeps the flow zone for a contact zone when the flow does not ask', { contact: { time_zone: 'Asia/Tokyo' } }, text, undefined],
      ['skips an anchored send past its grace (the visit may hold an approval)', { state: { anchor_at: new Date(NOW.getTime() - 2 * HOUR) } }, { ...text, anchor_grace_ms: HOUR }, { kind: 'skip', reason: 'anchor_past_grace', visit: true }],
      ['lets an anchored send through at exactly its grace', { state: { anchor_at: new Date(NOW.getTime() - HOUR) } }, { ...text, anchor_grace_ms: HOUR }, undefined],
      ['skips an anchored send of an enrollment with no anchor', {}, { ...text, anchor_grace_ms: HOUR }, { kind: 'skip', reason: 'anchor_missing', visit: true }],
      [
        'skips the anchor before the window: a reminder long over never waits for the opening',
        { now: new Date('2026-03-10T03:00:00Z'), state: { anchor_at: new Date('2026-03-09T03:00:00Z') } },
        { ...text, anchor_grace_ms: HOUR },
        { kind: 'skip', reason: 'anchor_past_grace', visit: true },
      ],
      ['skips without the consent tag when every flow needs it', { organization: { consent_mode: 'all_opt_in' } }, text, { kind: 'skip', reason: 'no_consent' }],
      ['lets a send through with the consent tag', { organization: { consent_mode: 'all_opt_in' }, contact: { tags: ['opt_in'] } }, text, undefined],
      ['asks no consent of a utility flow under marketing_opt_in', { organization: { consent_mode: 'marketing_opt_in' } }, text, undefined],
      ['skips a marketing flow without the tag under marketing_opt_in', { organization: { consent_mode: 'marketing_opt_in' }, settings: { purpose: 'marketing' } }, text, { kind: 'skip', reason: 'no_consent' }],
      ['defers for the window before checking consent', { now: new Date('2026-03-10T21:00:00Z'), organization: { consent_mode: 'all_opt_in' } }, text, { kind: 'defer', at: new Date('2026-03-11T08:00:00Z'), reason: 'send_window', plan: true }],
    ])('%s', (_, overrides, config, expected) => {
      const { sut } = aGate();
      expect(sut.opening(aContext(overrides), config)).toEqual(expected);
    });
  });

  describe('contentRoute', () => {
    const outside = { contact: { last_inbound_at: new Date(NOW.getTime() - 25 * HOUR) } };
    it.each<[string, Overrides, SendActionConfig, ReturnType<SendGate['contentRoute']>]>([
      ['sends free text inside the 24 h window', {}, text, { kind: 'free' }],
      ['sends a template step as its template, inside or outside the window', outside, { mode: 'template', template: fallback }, { kind: 'template', template: fallback }],
      ['falls back to the template outside the window', outside, { ...text, template_fallback: fallback }, { kind: 'template', template: fallback }],
      ['skips free text outside the window with no fallback', outside, text, { kind: 'skip', reason: 'outside_service_window' }],
      ['skips an AI-written step outside the window before asking the model', outside, { mode: 'ai', instructions: 'follow up' }, { kind: 'skip', reason: 'outside_service_window' }],
      ['treats a contact who never wrote as outside the window', { contact: { last_inbound_at: null } }, { mode: 'media', media: { media_type: 'image', link: 'https://example.com/a.png' } }, { kind: 'skip', reason: 'outside_service_window' }],
      ['is still inside the window one second before 24 h', { contact: { last_inbound_at: new Date(NOW.getTime() - 24 * HOUR + 1000) } }, text, { kind: 'free' }],
    ])('%s', (_, overrides, config, expected) => {
      const { sut } = aGate();
      expect(sut.contentRoute(aContext(overrides), config)).toEqual(expected);
    });
  });

  describe('admit', () => {
    const backlog: InFlightDeferral = { at: new Date(NOW.getTime() + 5000), reason: 'sender_backlog', plan: true, announce: false };
    it.each<[string, Parameters<typeof aGate>[0], Overrides, Awaited<ReturnType<SendGate['admit']>>]>([
      ['admits on the chosen number when every limit has room', {}, {}, { kind: 'admit', senderId: SENDER }],
      ['retries in 15 s when no number is usable (no plan)', { sender: undefined }, {}, { kind: 'defer', at: new Date(NOW.getTime() + SENDER_RETRY_MS), reason: 'sender_unavailable', plan: false }],
      ['parks after 30 min without a usable number', { sender: undefined }, { state: { sender_unavailable_since: new Date(NOW.getTime() - SENDER_PARK_AFTER_MS) } }, { kind: 'park', reason: INSTANCE_UNAVAILABLE }],
      ['still retries one ms before the 30 min', { sender: undefined }, { state: { sender_unavailable_since: new Date(NOW.getTime() - SENDER_PARK_AFTER_MS + 1) } }, { kind: 'defer', at: new Date(NOW.getTime() + SENDER_RETRY_MS), reason: 'sender_unavailable', plan: false }],
      ['defers a capped contact until its oldest send leaves the 24 h (plus 1 s)', {}, { recentSends: { count: 3, oldest: new Date(NOW.getTime() - HOUR) } }, { kind: 'defer', at: new Date(NOW.getTime() - HOUR + 24 * HOUR + 1000), reason: 'contact_cap', plan: true }],
      ['lets a contact under the cap through', {}, { recentSends: { count: 2, oldest: new Date(NOW.getTime() - HOUR) } }, { kind: 'admit', senderId: SENDER }],
      ['defers by the gap when another release holds the number pacing row', { pacing: 'busy' }, {}, { kind: 'defer', at: new Date(NOW.getTime() + GAP_MS), reason: 'pacing', plan: false }],
      ['defers to the number next release time when it is ahead', { pacing: new Date(NOW.getTime() + 100) }, {}, { kind: 'defer', at: new Date(NOW.getTime() + 100), reason: 'pacing', plan: false }],
      ['ignores pacing with a gap of 0', { pacing: 'busy', gapMs: 0 }, {}, { kind: 'admit', senderId: SENDER }],
      ['defers a number whose in-flight window is full, as the window says', { backlog }, {}, { kind: 'defer', at: backlog.at, reason: 'sender_backlog', plan: true, announce: false }],
      ['defers 30 min when the monthly quota is used up', { quotaLeft: false }, { organization: { monthly_send_quota: 10 } }, { kind: 'defer', at: new Date(NOW.getTime() + QUOTA_RETRY_MS), reason: 'monthly_quota', plan: true }],
      ['admits within the monthly quota', {}, { organization: { monthly_send_quota: 10 } }, { kind: 'admit', senderId: SENDER }],
    ])('%s', async (_, gate, overrides, expected) => {
      const { sut } = aGate(gate);
      expect(await sut.admit(aContext(overrides), 'n-send')).toEqual(expected);
    });

    it('moves the number pacing on by the gap only for an admitted send', async () => {
      const admitted = aGate();
      await admitted.sut.admit(aContext(), 'n-send');
      expect(admitted.senders.setPacing).toHaveBeenCalledWith(expect.anything(), SENDER, new Date(NOW.getTime() + GAP_MS));

      const overQuota = aGate({ quotaLeft: false });
      await overQuota.sut.admit(aContext({ organization: { monthly_send_quota: 10 } }), 'n-send');
      expect(overQuota.senders.setPacing).not.toHaveBeenCalled();
    });

    it('takes the quota of the UTC calendar month, and none when the quota is unlimited', async () => {
      const limited = aGate();
      await limited.sut.admit(aContext({ now: new Date('2026-03-31T23:30:00Z'), organization: { monthly_send_quota: 10, send_window: { start_hour: 0, end_hour: 24, days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' } } }), 'n-send');
      expect(limited.release.takeMonthlySend).toHaveBeenCalledWith(expect.anything(), 'org-1', '2026-03-01', 10);

      const unlimited = aGate();
      await unlimited.sut.admit(aContext(), 'n-send');
      expect(unlimited.release.takeMonthlySend).not.toHaveBeenCalled();
    });

    it('checks the in-flight window after the cap and pacing, for this visit', async () => {
      const capped = aGate();
      await capped.sut.admit(aContext({ recentSends: { count: 3, oldest: NOW } }), 'n-send');
      expect(capped.senders.lockPacing).not.toHaveBeenCalled();
      expect(capped.inFlight.admit).not.toHaveBeenCalled();

      const free = aGate();
      await free.sut.admit(aContext(), 'n-send');
      expect(free.inFlight.admit).toHaveBeenCalledWith(expect.anything(), SENDER, NOW, { enrollmentId: 'enr-1', nodeId: 'n-send', step: 3 });
    });

    it('records since when no number was usable, keeps that instant on later tries, and clears it once one is', async () => {
      const since = new Date(NOW.getTime() - 10 * 60_000);
      const first = aContext();
      await aGate({ sender: undefined }).sut.admit(first, 'n-send');
      expect(first.state.sender_unavailable_since).toEqual(NOW);

      const later = aContext({ state: { sender_unavailable_since: since } });
      await aGate({ sender: undefined }).sut.admit(later, 'n-send');
      expect(later.state.sender_unavailable_since).toEqual(since);

      const back = aContext({ state: { sender_unavailable_since: since } });
      await aGate().sut.admit(back, 'n-send');
      expect(back.state.sender_unavailable_since).toBeNull();
    });

    it('asks the number chain with the enrollment, flow and last conversation numbers', async () => {
      const { sut, numbers } = aGate();
      await sut.admit(aContext({ state: { sender_id: 's-enr' }, settings: { sender: { mode: 'fixed', sender_id: 's-flow' } }, contact: { last_sender_id: 's-conv' } }), 'n-send');
      expect(numbers.choose).toHaveBeenCalledWith(expect.anything(), 'org-1', { enrollmentSenderId: 's-enr', flowSender: { mode: 'fixed', sender_id: 's-flow' }, lastConversationSenderId: 's-conv' });
    });
  });
});
