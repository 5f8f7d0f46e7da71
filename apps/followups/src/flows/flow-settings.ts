import { FLOW_TIMEZONE_MODES, FLOW_TRIGGER_KINDS, type FlowSettings, type FollowupSettingsView, HANDOFF_POLICIES, SENDER_MODES } from '@touchpoint/contracts';
import { type SendWindow, sendWindowProblems } from '@touchpoint/time';
import { compileSegment, type Segment } from '../rules/segment-sql.js';

/**
 * Rules of a flow's `settings` (seed 002 example body): their shape, and the send window they
 * resolve to once the organization's default window fills what the flow leaves out.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const SETTINGS_KEYS = ['trigger', 'handoff_policy', 'send_start_hour', 'send_end_hour', 'send_days', 'timezone', 'purpose', 'environment', 'sender', 'require_approval', 'timezone_mode'];

/**
 * Every problem of a flow's settings, as `field: problem` lines (empty when valid). Draft saves
 * refuse these with 400 `validation_failed`; publish reports them as `invalid_settings`.
 */
export function flowSettingsProblems(settings: unknown): string[] {
  if (!isObject(settings)) return ['settings: must be an object'];
  const problems: string[] = [];
  for (const key of Object.keys(settings)) if (!SETTINGS_KEYS.includes(key)) problems.push(`settings.${key}: unknown field`);
  const trigger = settings.trigger;
  if (!isObject(trigger)) problems.push('settings.trigger: must be an object {kind, cancel_on_reply}');
  else {
    if (!FLOW_TRIGGER_KINDS.includes(trigger.kind as never)) problems.push(`settings.trigger.kind: must be one of ${FLOW_TRIGGER_KINDS.join(', ')}`);
    if (typeof trigger.cancel_on_reply !== 'boolean') problems.push('settings.trigger.cancel_on_reply: must be a boolean');
    problems.push(...triggerFilterProblems(trigger));
  }
  if (!HANDOFF_POLICIES.includes(settings.handoff_policy as never)) problems.push(`settings.handoff_policy: must be one of ${HANDOFF_POLICIES.join(', ')}`);
  const windowKeys = ['send_start_hour', 'send_end_hour', 'send_days', 'timezone'].filter((k) => settings[k] !== undefined);
  if (windowKeys.length > 0 && windowKeys.length < 4) problems.push('settings: send_start_hour, send_end_hour, send_days and timezone go together (all or none)');
  if (windowKeys.length === 4) {
    for (const p of sendWindowProblems(windowOfFlowSettings(settings as unknown as FlowSettings)!)) problems.push(`settings send window: ${p}`);
  }
  if (settings.purpose !== undefined && settings.purpose !== 'utility' && settings.purpose !== 'marketing') problems.push('settings.purpose: must be utility or marketing');
  if (settings.environment !== undefined && settings.environment !== 'live' && settings.environment !== 'test') problems.push('settings.environment: must be live or test');
  if (settings.require_approval !== undefined && typeof settings.require_approval !== 'boolean') problems.push('settings.require_approval: must be a boolean');
  if (settings.timezone_mode !== undefined && !FLOW_TIMEZONE_MODES.includes(settings.timezone_mode as never)) problems.push(`settings.timezone_mode: must be one of ${FLOW_TIMEZONE_MODES.join(', ')}`);
  if (settings.sender !== undefined) {
    const sender = settings.sender;
    if (!isObject(sender) || !SENDER_MODES.includes(sender.mode as never)) problems.push(`settings.sender.mode: must be one of ${SENDER_MODES.join(', ')}`);
    else if (sender.mode === 'fixed' && (typeof sender.sender_id !== 'string' || sender.sender_id.length === 0)) problems.push('settings.sender.sender_id: required when mode is fixed');
  }
  return problems;
}

/** The flow's own window, or undefined when it sets none. */
function windowOfFlowSettings(settings: FlowSettings): SendWindow | undefined {
  if (settings.send_start_hour === undefined) return undefined;
  return { startHour: settings.send_start_hour, endHour: settings.send_end_hour!, days: settings.send_days!, timezone: settings.timezone! };
}

/** The window a flow's sends respect: its own, else the organization's default (seed 000 "send window"). */
export function effectiveSendWindow(settings: FlowSettings, organization: Pick<FollowupSettingsView, 'send_window'>): SendWindow {
  const own = windowOfFlowSettings(settings);
  if (own) return own;
  const d = organization.send_window;
  return { startHour: d.start_hour, endHour: d.end_hour, days: d.days, timezone: d.timezone };
}

/** Trigger kinds whose enrollment starts in a conversation the contact just wrote in (24-hour window open). */
export const CONVERSATION_TRIGGERS: readonly string[] = ['manual', 'inbound_keyword', 'conversation_resolved'];

/** Problems of a rule's filter (seed 000 "Rules": trigger filter and segment conditions). */
function triggerFilterProblems(trigger: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (trigger.kind === 'inbound_keyword' && !(Array.isArray(trigger.keywords) && trigger.keywords.length > 0 && trigger.keywords.every((k) => typeof k === 'string' && k.trim() !== ''))) {
    problems.push('settings.trigger.keywords: an inbound_keyword rule needs at least one keyword');
  }
  for (const key of ['tag', 'status', 'stage_id'] as const) if (trigger[key] !== undefined && typeof trigger[key] !== 'string') problems.push(`settings.trigger.${key}: must be a string`);
  if (trigger.segment !== undefined) {
    const segment = trigger.segment as Segment;
    if (!isObject(segment) || (segment.match !== 'all' && segment.match !== 'any') || !Array.isArray(segment.rules)) problems.push('settings.trigger.segment: must be {match: all|any, rules: [...]}');
    else {
      try {
        compileSegment(segment, []);
      } catch (err) {
        problems.push(`settings.trigger.segment: ${(err as Error).message}`);
      }
    }
  }
  return problems;
}
