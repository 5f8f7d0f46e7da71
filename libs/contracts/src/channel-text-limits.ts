import type { MessagingChannel } from './messaging.js';

/**
 * How long one message's text may be, per channel, in Unicode code points (`codePointLength`,
 * libs/text: an emoji counts one). The one source for every check of a text's length: the
 * dispatcher's payload rules, messaging's send path and outreach's draft check all read these, so
 * a text one of them accepts is never refused by the next (a draft approved at 4,600 characters
 * must not fail at WhatsApp's 4,096 on the email channel).
 */

/** Longest WhatsApp text body (Meta's WhatsApp Cloud API message reference: 4096 characters). */
export const WHATSAPP_TEXT_MAX = 4096;
/** Longest email body the dispatcher accepts (ours: a sane bound for one text email; Nylas sets none this low). */
export const OUTBOX_EMAIL_BODY_MAX = 100_000;
/** Longest LinkedIn message the dispatcher sends (LinkedIn's own message limit, 8000 characters). */
export const OUTBOX_LINKEDIN_MESSAGE_MAX = 8000;
/** Longest text on a channel the dispatcher does not send (SMS, web, in-app), ours: WhatsApp's, as before. */
export const STORED_TEXT_MAX = 4096;

/** The longest text `messaging.send` accepts on each channel, code points. */
export const CHANNEL_TEXT_MAX: Readonly<Record<MessagingChannel, number>> = {
  whatsapp: WHATSAPP_TEXT_MAX,
  email: OUTBOX_EMAIL_BODY_MAX,
  linkedin: OUTBOX_LINKEDIN_MESSAGE_MAX,
  sms: STORED_TEXT_MAX,
  web: STORED_TEXT_MAX,
  in_app: STORED_TEXT_MAX,
};

/** The longest text of any channel: the bound of an edge that does not yet know the channel (an operator's send by conversation id). */
export const LONGEST_TEXT_MAX = Math.max(...Object.values(CHANNEL_TEXT_MAX));

/*
 * Outreach's draft limits (seed 003 §4.4 for LinkedIn; ours for email, the seed leaves email
 * lengths to the check). Each sits at or below its channel's send limit above, so an approved
 * draft always fits the send; a unit spec holds that true.
 */
/** Longest LinkedIn connection note (seed 003 §4.4). */
export const DRAFT_LINKEDIN_NOTE_MAX = 200;
/** Longest LinkedIn message draft (seed 003 §4.4). */
export const DRAFT_LINKEDIN_MESSAGE_MAX = 1000;
/** Longest email subject of a draft (ours). */
export const DRAFT_EMAIL_SUBJECT_MAX = 200;
/** Longest email body of a draft (ours). */
export const DRAFT_EMAIL_BODY_MAX = 5000;
