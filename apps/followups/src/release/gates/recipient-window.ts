import type { FlowSettings, FollowupSettingsView } from '@touchpoint/contracts';
import { isValidTimeZone, type SendWindow } from '@touchpoint/time';
import { effectiveSendWindow } from '../../flows/flow-settings.js';

/**
 * The send window of one recipient (seed 000 "send window → defer to opening", read on the
 * contact's clock when the flow asks for it). The hours and days stay the flow's (or the
 * organization's default); only the zone they are read in changes: with `timezone_mode: contact`
 * a contact with a valid IANA `time_zone` gets its quiet hours in that zone, anyone else the
 * flow's. DST comes from `nextSendOpening` (luxon calendar days), as for any window.
 * @param contactZone the contact's `time_zone` from messaging, or null when unknown
 * @returns the window to check a send against now
 */
export function recipientSendWindow(settings: FlowSettings, organization: Pick<FollowupSettingsView, 'send_window'>, contactZone: string | null | undefined): SendWindow {
  const window = effectiveSendWindow(settings, organization);
  if (settings.timezone_mode !== 'contact' || !contactZone || !isValidTimeZone(contactZone)) return window;
  return { ...window, timezone: contactZone };
}
