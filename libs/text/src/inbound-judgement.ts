import { isAutoReply, isOptOut } from './index.js';

/** One email header as Nylas reports it (`fields=include_headers`). */
export interface EmailHeader {
  name: string;
  value: string;
}

/**
 * What is known of one inbound message when it is judged. Every service judges from these facts
 * only, through `judgeInbound`, so messaging, followups and outreach can never disagree.
 */
export interface InboundFacts {
  /** `email`, `whatsapp`, `linkedin`, `sms`, `web`. Only email has an auto-reply rule. */
  channel: string;
  /** The message text (quoted lines included: the opt-out rule strips them itself). */
  text: string | null | undefined;
  /** Email subject, when the channel has one. */
  subject?: string | null;
  /** Email headers as read from the provider. Absent or empty: the message has none we know of. */
  headers?: readonly EmailHeader[] | null;
  /**
   * True when the message has headers but they could not be read (the provider did not answer
   * after our retries). The auto-reply rule then rests on the subject alone, and the judgement says
   * so with `certain: false`.
   */
  headersUnreadable?: boolean;
  /**
   * False when the text cannot carry an opt-out whatever it says: a media caption or a reaction
   * emoji on WhatsApp is not a command (seed 004, inbound messages). Default true.
   */
  textMayOptOut?: boolean;
}

/**
 * The verdict on one inbound message. Exactly one of `autoReply`, `optOut`, `reply` is true:
 * - `autoReply`: an automatic answer (out of office, vacation responder). Email only. It is stored
 *   and shown, and starts nothing: never an opt-out, never a reply (seed 003 §4.7 "Auto-reply").
 * - `optOut`: the person asked not to be contacted (the phrase rule, `isOptOut`, seed 003 §4.7
 *   "Opt-out and bounce"): every sender stops, on every channel. Not a reply: it takes the opt-out
 *   path, never the agent (seed 003 §4.7) nor a flow's `replied` exit (seed 000 "Stop paths").
 * - `reply`: a person answered. It stops or interrupts what waits for an answer (seed 000 "Stop
 *   paths", seed 003 §4.7 "Reply interrupt").
 *
 * `certain` is false only for an email whose headers could not be read and whose subject does not
 * mark it automatic: it was judged by its subject and text alone. Consumers then take the side that cannot hurt the person: an opt-out
 * phrase is honoured (a suppression a user can lift is better than mail to someone who said stop),
 * a reply still stops follow-ups and interrupts the enrollment (the reply wins, DESIGN §5 rule 3),
 * but nothing that only a real human reply may cause happens (outreach does not promote a prospect
 * to the CRM on it).
 */
export interface InboundJudgement {
  autoReply: boolean;
  optOut: boolean;
  reply: boolean;
  certain: boolean;
}

/**
 * The one rule for "is this an auto-reply, an opt-out or a reply" (seed 003 §4.7: an auto-reply is
 * never an opt-out and never a reply), used by messaging when it stores an inbound message; the
 * flags it publishes on `messaging.message.received` are this verdict, and followups and outreach
 * act on them without judging again. Pure function, no I/O.
 *
 * Order: the auto-reply rule (`isAutoReply`: headers, then subject; email only) first, then the
 * opt-out phrase rule (`isOptOut`) on what is not an auto-reply; anything else is a reply.
 */
export function judgeInbound(facts: InboundFacts): InboundJudgement {
  const email = facts.channel === 'email';
  const autoReply = email && isAutoReply({ headers: facts.headers ? [...facts.headers] : [], subject: facts.subject ?? null });
  const optOut = !autoReply && facts.textMayOptOut !== false && isOptOut(facts.text);
  return { autoReply, optOut, reply: !autoReply && !optOut, certain: autoReply || !(email && facts.headersUnreadable === true) };
}
