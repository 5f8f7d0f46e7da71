// Over 400 lines on purpose: declarations (one service's contract: names, data shapes, RPC patterns) and one shared check, no rules to split.
/**
 * Contract of the messaging service (DESIGN §4, seed 004): contacts, conversations and their
 * bounded instances, messages of every channel, the shared send path, notifications, the operator
 * API and the real-time feed. Event and command names and their data shapes are defined here once.
 *
 * The WhatsApp inbound RPC (`messaging.inbound.whatsapp`, `WhatsAppInboundBatch`) is declared in
 * `outbox.ts` beside the other Meta webhook contracts, because the gateway ingress speaks both.
 */

/** Channels a conversation and a message can live on. */
export const MESSAGING_CHANNELS = ['whatsapp', 'email', 'linkedin', 'sms', 'web', 'in_app'] as const;
export type MessagingChannel = (typeof MESSAGING_CHANNELS)[number];

/** Kinds of contact: a customer record or an outreach prospect (DESIGN §6). */
export const CONTACT_KINDS = ['crm', 'prospect'] as const;
export type ContactKind = (typeof CONTACT_KINDS)[number];

/**
 * Outbound message status. Moves forward only (`queued → sent → delivered → read`); `failed` and
 * `cancelled` are terminal. `ambiguous`: the send's outcome is unknown (never retried), until the
 * provider's status or an operator resolves it to `sent` or `failed`. Inbound messages are `received`.
 */
export const MESSAGE_STATUSES = ['queued', 'ambiguous', 'sent', 'delivered', 'read', 'failed', 'cancelled', 'received'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** Instance lifecycle (seed 004 "Instance Lifecycle"): one way only. */
export const INSTANCE_STATUSES = ['active', 'closed', 'summarized'] as const;
export type InstanceStatus = (typeof INSTANCE_STATUSES)[number];

/** Why an instance closed: the message cap, idleness, or the conversation was resolved. */
export type InstanceCloseReason = 'message_limit' | 'time_limit' | 'resolved';

/** Who wrote an outbound message. `operator` is a person (handoff); the others are automation. */
export type MessageSenderType = 'contact' | 'operator' | 'system' | 'ai' | 'followup' | 'outreach' | 'notification';

// ---------------------------------------------------------------------------------------------
// RPC patterns
// ---------------------------------------------------------------------------------------------

/** RPC patterns the messaging service answers (gateway and other services). */
export const MessagingRpc = {
  /** `MessagingSendData` → `MessagingSendResult` (the same rule as the `messaging.send` command). */
  Send: 'messaging.send',
  /** `WhatsAppStatusBatch` (outbox.ts) → `{ applied, pending }`: statuses applied to message rows. */
  WhatsAppStatuses: 'messaging.status.whatsapp',
  /** `MessagingInboundRecordData` → `{ message_id, duplicate }`: an inbound message of another channel. */
  InboundRecord: 'messaging.inbound.record',

  ContactCreate: 'messaging.contacts.create',
  ContactGet: 'messaging.contacts.get',
  ContactUpdate: 'messaging.contacts.update',
  ContactList: 'messaging.contacts.list',
  ContactTag: 'messaging.contacts.tag',
  ContactUntag: 'messaging.contacts.untag',
  ContactErase: 'messaging.contacts.erase',

  ConversationList: 'messaging.conversations.list',
  ConversationGet: 'messaging.conversations.get',
  ConversationMessages: 'messaging.conversations.messages',
  ConversationSend: 'messaging.conversations.send',
  ConversationResolve: 'messaging.conversations.resolve',

  NotificationCreate: 'messaging.notifications.create',
  NotificationGet: 'messaging.notifications.get',
  NotificationList: 'messaging.notifications.list',
  TemplateCreate: 'messaging.notification_templates.create',
  TemplateList: 'messaging.notification_templates.list',
  PreferenceSet: 'messaging.notification_preferences.set',
  PreferenceList: 'messaging.notification_preferences.list',

  /** `MessagingStreamReadData` → `MessagingStreamPage`: the real-time feed after a cursor. */
  StreamRead: 'messaging.stream.read',

  /** `CrmEventIngestData` → `CrmEventIngestResult`: a CRM's lead or deal event, published as a `CrmEvents` event. */
  CrmEventIngest: 'messaging.crm.ingest',
} as const;

/** Bus commands the messaging service consumes. */
export const MessagingCommands = {
  /** `MessagingSendData`: send a message through the shared send path (key = idempotency). */
  Send: 'messaging.send',
} as const;

/** Events the messaging service publishes (transactional outbox). */
export const MessagingEvents = {
  /** `MessageReceivedData`: an inbound message was stored (replies, keywords, opt-outs). */
  MessageReceived: 'messaging.message.received',
  /** `MessageOutcomeData`: the provider accepted an outbound message. */
  MessageSent: 'messaging.message.sent',
  /** `MessageOutcomeData`: an outbound message failed for good (enqueue refused or undeliverable). */
  MessageFailed: 'messaging.message.failed',
  /** `MessageOutcomeData`: an outbound message was cancelled before it went out. */
  MessageCancelled: 'messaging.message.cancelled',
  /**
   * `MessageOutcomeData` with `status_at`: the provider reported an outbound message delivered to
   * the phone (published once per message, when its status moves to `delivered`).
   */
  MessageDelivered: 'messaging.message.delivered',
  /**
   * `MessageOutcomeData` with `status_at`: the provider reported an outbound message read
   * (published once per message). A `read` can come without a `delivered` before it, or before one
   * that is then ignored: the message's status only moves forward.
   */
  MessageRead: 'messaging.message.read',
  /** Feed only (`MessageView`): an outbound message was written `queued` (or `sent` for in-app channels). */
  MessageQueued: 'messaging.message.queued',
  /** Feed only (`MessageStatusChangedData`): a delivery status moved an outbound message forward. */
  MessageStatusChanged: 'messaging.message.status_changed',
  /** `HumanMessageSentData`: an operator wrote to the contact (handoff: automation stops). */
  HumanMessageSent: 'messaging.human_message_sent',
  /** `ConversationResolvedData`: an operator resolved the conversation. */
  ConversationResolved: 'messaging.conversation.resolved',
  /** Feed only (`InstanceChangedData`): an instance opened, closed (cap, idle, resolved) or was summarized. */
  InstanceOpened: 'messaging.instance.opened',
  InstanceClosed: 'messaging.instance.closed',
  InstanceSummarized: 'messaging.instance.summarized',
  /** `ContactEventData`. */
  ContactCreated: 'messaging.contact.created',
  ContactUpdated: 'messaging.contact.updated',
  /** `ContactTagEventData`. */
  ContactTagged: 'messaging.contact.tagged',
  ContactUntagged: 'messaging.contact.untagged',
  /** `ContactEventData`: personal fields were wiped; every automation for the contact must stop. */
  ContactErased: 'messaging.contact.erased',
  /** `ContactOptedOutData`: the contact asked not to be contacted again on a channel. */
  ContactOptedOut: 'messaging.contact.opted_out',
  /** `SuppressionRequestedData`: the dispatcher should suppress this address. */
  SuppressionRequested: 'messaging.suppression.requested',
  /**
   * `InboundAcknowledgedData`: a person's message was acknowledged (published in the transaction
   * that stores the WhatsApp receipt, or the message of the other channels), before any judgement.
   * The dispatcher holds that address's queued sends marked `stop_on_reply` for a bounded time
   * (`OUTBOX_REPLY_HOLD_MS`), so the requester's cancel can arrive first.
   */
  InboundAcknowledged: 'messaging.inbound.acknowledged',
  /**
   * `InboundDeniedData`: a person's WhatsApp message was refused by the abuse check (a rate limit,
   * a penalty) and not stored. The person still answered: followups stops on it as on a stored
   * reply (seed 000 "Stop hooks": reply), so a denied answer never lets a `cancel_on_reply` send go.
   */
  InboundDenied: 'messaging.inbound.denied',
  /** `NotificationCreatedData`. */
  NotificationCreated: 'messaging.notification.created',
  /** `NotificationDeliveryUpdatedData`: a delivery left `pending`, or a `sent` one failed later. */
  NotificationDeliveryUpdated: 'messaging.notification.delivery_updated',
} as const;

// ---------------------------------------------------------------------------------------------
// The shared send path
// ---------------------------------------------------------------------------------------------

/**
 * What to send. `text` is the common case; `template`, `media` and `interactive` follow the
 * dispatcher's payload shapes (outbox.ts) for WhatsApp.
 */
export interface MessagingSendContent {
  text?: string;
  template?: { name: string; language: string; components?: unknown[] };
  media?: { media_type: 'image' | 'document' | 'audio' | 'video'; link?: string; media_id?: string; caption?: string; filename?: string };
  interactive?: Record<string, unknown>;
  /** Email only. */
  subject?: string;
}

/**
 * Data of `messaging.send` (command and RPC).
 *
 * Idempotency keys (seed 004 "Idempotency keys"): `reply:{inboundWamid}:{purpose}` for replies to
 * an inbound message, `nd:{deliveryId}` for notification deliveries, the caller's own stable key
 * otherwise (a follow-up step run, an approved outreach action). The same key twice is one message.
 */
export interface MessagingSendData extends MessagingSendContent {
  organization_id: string;
  idempotency_key: string;
  channel: MessagingChannel;
  /**
   * The recipient: a contact id, or an address (`to`) for which a contact is found or created.
   * Both together fix the address: the message is the contact's, and the wire gets exactly `to`,
   * whatever the contact holds by the time the command is consumed (an approved outreach send goes
   * to the address the reviewer approved, `approved_payload.to`, seed 003 §4.5–4.6). For LinkedIn,
   * `to` is the member's provider id, or the profile URL when none is known.
   */
  contact_id?: string;
  to?: string;
  /** Send in this conversation (must belong to the contact); default: the contact's on the channel. */
  conversation_id?: string;
  /** Who wrote it; `operator` emits `messaging.human_message_sent`. */
  sender_type: MessageSenderType;
  /** Operator (member) id or automation id, for the thread view. */
  sender_id?: string;
  /** The sending business number / mailbox (dispatcher sender id); default sender otherwise. */
  outbox_sender_id?: string;
  /** The service asking; echoed on the outcome events so it can pick its own. */
  requester: string;
  /** The inbound message (wamid) this replies to, if any. */
  reply_to_external_id?: string;
  /** Links the message to a notification delivery. */
  notification_delivery_id?: string;
  /** Small correlation facts echoed on the outcome events (enrollment id, step, action id...). */
  context?: Record<string, string | number>;
  /**
   * Whether a reply of the person stops this send (a `cancel_on_reply` follow-up, an outreach
   * draft): the dispatcher then holds it for a moment after a message from the person is
   * acknowledged (`messaging.inbound.acknowledged`), so the requester's cancel arrives first.
   * Default false; ignored on operator and system sends and on notifications (never held).
   */
  stop_on_reply?: boolean;
}

/** Answer of the `messaging.send` RPC. `created` is false when the key already had a message. */
export interface MessagingSendResult {
  message_id: string;
  conversation_id: string;
  instance_id: string;
  contact_id: string;
  status: MessageStatus;
  created: boolean;
}

/**
 * Data of `messaging.message.sent | failed | cancelled`. The ids are null only on a `failed` for a
 * `messaging.send` command so malformed that no message row could be written.
 */
export interface MessageOutcomeData {
  message_id: string | null;
  conversation_id: string | null;
  contact_id: string | null;
  channel: MessagingChannel;
  idempotency_key: string;
  requester: string;
  status: MessageStatus;
  provider_message_id?: string | null;
  /** `failed` only: where it failed (`enqueue`: never queued; `delivery`: queued but undeliverable). */
  failure_stage?: 'enqueue' | 'delivery';
  error_code?: string | null;
  /** `failed` at `delivery` only: the provider's sub-code and explanation (`MessageView.error_subcode`, `error_details`). */
  error_subcode?: string | null;
  error_details?: string | null;
  notification_delivery_id?: string | null;
  context?: Record<string, string | number>;
  /** `delivered` / `read` only: when the provider says it happened (ISO-8601, UTC). */
  status_at?: string;
}

/** Data of `messaging.message.status_changed`. */
export interface MessageStatusChangedData {
  message_id: string;
  conversation_id: string;
  contact_id: string;
  channel: MessagingChannel;
  from: MessageStatus;
  to: MessageStatus;
  provider_message_id: string | null;
}

// ---------------------------------------------------------------------------------------------
// Inbound
// ---------------------------------------------------------------------------------------------

/** Data of `messaging.message.received`. */
export interface MessageReceivedData {
  message_id: string;
  conversation_id: string;
  instance_id: string;
  contact_id: string;
  channel: MessagingChannel;
  direction: 'inbound';
  /** Provider id (wamid, email message id, LinkedIn message id). */
  external_id: string | null;
  /** Email thread id / LinkedIn chat id, when the channel has one. */
  thread_id?: string | null;
  /** The message text (caption for media), so consumers can match keywords. */
  text: string | null;
  message_type: string;
  /** The provider id of the outbound message this one answers, when it quotes one. */
  in_reply_to?: string | null;
  /**
   * The dispatcher sender (business number, mailbox, LinkedIn account) the message arrived on, when
   * known: a follow-up sent from "the last conversation" answers from it (seed 000, sender modes).
   */
  sender_id?: string | null;
  /**
   * An automatic answer (out-of-office): never an opt-out, never a reply. With `opt_out` this is
   * libs/text `judgeInbound`'s verdict, made once by messaging; consumers act on it and never judge
   * again. Neither flag set: a reply.
   */
  auto_reply: boolean;
  /** The person opted out (the phrase rule, never on an auto-reply; libs/text `judgeInbound`). */
  opt_out: boolean;
  /**
   * False only for an email whose headers could not be read, judged by its subject alone
   * (`judgeInbound`'s `certain`): act on it, but not on what only a human reply may cause
   * (outreach's promotion of a prospect). Absent: true.
   */
  judgement_certain?: boolean;
  /** Contact address the message came from (E.164 phone, email, LinkedIn id). */
  from: string;
  /**
   * ISO-8601 UTC instant the provider received the message (its timestamp; the store time when the
   * provider gave none). Relative dates in its text ("back on Monday") count from it.
   */
  received_at?: string;
}

/** Data of `messaging.inbound.record`: an inbound message of a channel other than WhatsApp. */
export interface MessagingInboundRecordData {
  organization_id: string;
  channel: Exclude<MessagingChannel, 'whatsapp'>;
  /** Sender address: email, LinkedIn provider id, phone (sms), or a web visitor id. */
  from: string;
  from_name?: string;
  external_id: string;
  thread_id?: string;
  text?: string;
  subject?: string;
  /**
   * Email headers `{ name, value }` (the auto-reply rule reads them). Absent on an email with
   * `sender_id`: messaging reads them from the provider with that mailbox's grant.
   */
  headers?: { name: string; value: string }[];
  /** The dispatcher sender (the mailbox: its Nylas grant) the message arrived on, when known. */
  sender_id?: string;
  in_reply_to?: string;
  /** ISO-8601 instant the provider received it. */
  received_at?: string;
}

// ---------------------------------------------------------------------------------------------
// Contacts
// ---------------------------------------------------------------------------------------------

/** A contact as answers show it. */
export interface ContactView {
  id: string;
  organization_id: string;
  kind: ContactKind;
  name: string | null;
  /** E.164 (`+5511987654321`). */
  phone: string | null;
  email: string | null;
  linkedin_url: string | null;
  linkedin_provider_id: string | null;
  /**
   * A prospect's link to the CRM person they are (seed 003 §4.1): outreach enrolls the CRM person
   * instead, and a link saved while the prospect is enrolled promotes the enrollment. Null otherwise.
   */
  linked_contact_id?: string | null;
  tags: string[];
  custom_fields: Record<string, unknown>;
  time_zone: string | null;
  /** Rate-limit tier (`all`, `premium`, ...). */
  user_type: string;
  opted_out_at: string | null;
  erased: boolean;
  created_at: string;
  updated_at: string;
}

export interface ContactCreateData {
  organization_id: string;
  kind?: ContactKind;
  name?: string;
  phone?: string;
  email?: string;
  linkedin_url?: string;
  linkedin_provider_id?: string;
  tags?: string[];
  custom_fields?: Record<string, unknown>;
  time_zone?: string;
  user_type?: string;
}

export interface ContactUpdateData extends Partial<Omit<ContactCreateData, 'organization_id' | 'tags'>> {
  organization_id: string;
  contact_id: string;
  /** Links a prospect to a CRM contact of the organization (null removes the link); only a prospect may be linked. */
  linked_contact_id?: string | null;
}

/** Data of `messaging.contact.created | updated | erased`. */
export interface ContactEventData {
  contact_id: string;
  kind: ContactKind;
  /** Absent on `erased`: the personal fields are gone. */
  phone?: string | null;
  email?: string | null;
  /** The LinkedIn profile URL and member id (outreach matches opt-outs on them). */
  linkedin_url?: string | null;
  linkedin_provider_id?: string | null;
  /** A prospect's CRM person (seed 003 §4.1), on `updated`. */
  linked_contact_id?: string | null;
  /** `updated` by a WhatsApp number change only: the phone before it, and `reason: 'whatsapp_number_changed'`. */
  previous_phone?: string | null;
  reason?: 'whatsapp_number_changed';
  tags?: string[];
  /** The contact's IANA time zone (`America/Sao_Paulo`), null when unknown; absent on `erased`. */
  time_zone?: string | null;
  /** ISO-8601 UTC: the contact's version; a consumer keeping a copy never lets an older one win. */
  updated_at?: string;
}

/** Data of `messaging.contact.tagged | untagged`. */
export interface ContactTagEventData {
  contact_id: string;
  tags: string[];
  /** The tags after the change. */
  all_tags: string[];
}

/** Data of `messaging.contact.opted_out`. */
export interface ContactOptedOutData {
  contact_id: string;
  channel: MessagingChannel;
  message_id: string | null;
}

/** Data of `messaging.suppression.requested`. */
/** Data of `messaging.inbound.acknowledged`: who wrote, to which of our numbers or mailboxes, and when. */
export interface InboundAcknowledgedData {
  channel: 'whatsapp' | 'email' | 'linkedin';
  /** The person's address as the provider sent it (wa_id, email, LinkedIn provider id). */
  from: string;
  /** Our sender it arrived on (dispatcher sender id), or null when unknown. */
  sender_id: string | null;
  /** When messaging acknowledged it, ISO-8601 UTC: the hold runs from here, so a redelivery never extends it. */
  acknowledged_at: string;
}

/**
 * Data of `messaging.inbound.denied`: who wrote (the contact and conversation messaging matched),
 * messaging's judgement of the text (libs/text `judgeInbound`, as on `messaging.message.received`),
 * and why it was not stored.
 */
export interface InboundDeniedData {
  contact_id: string;
  conversation_id: string;
  channel: 'whatsapp';
  /** Provider id of the refused message (wamid). */
  external_id: string;
  /** The dispatcher sender (business number) it arrived on, when known. */
  sender_id: string | null;
  /** The message text (caption for media), as `messaging.message.received` carries it. */
  text: string | null;
  /** An automatic answer: never a reply (`judgeInbound`). */
  auto_reply: boolean;
  /** The person opted out (already applied when the message was acknowledged; `judgeInbound`). */
  opt_out: boolean;
  /** The abuse verdict's limit: `minute`, `hour`, `day`, `blocked`, `throttled`, …; null for a fail-closed denial. */
  limit_type: string | null;
}

export interface SuppressionRequestedData {
  contact_id: string | null;
  channel: 'whatsapp' | 'email' | 'linkedin';
  value: string;
  reason: 'opt_out' | 'erased' | 'bounce' | 'operator';
}

// ---------------------------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------------------------

export type ConversationStatus = 'open' | 'resolved';

export interface ConversationView {
  id: string;
  organization_id: string;
  contact_id: string;
  channel: MessagingChannel;
  status: ConversationStatus;
  active_instance_id: string | null;
  active_instance_message_count: number | null;
  last_message_at: string | null;
  resolved_at: string | null;
  created_at: string;
}

export interface MessageView {
  id: string;
  conversation_id: string;
  instance_id: string;
  contact_id: string;
  channel: MessagingChannel;
  direction: 'inbound' | 'outbound';
  sender_type: MessageSenderType;
  sender_id: string | null;
  message_type: string;
  body: string | null;
  subject: string | null;
  status: MessageStatus;
  external_id: string | null;
  thread_id: string | null;
  notification_id: string | null;
  attachments: { id: string; media_type: string; mime_type: string | null; url: string | null; provider_media_id: string | null; caption: string | null }[];
  created_at: string;
  sent_at: string | null;
  delivered_at: string | null;
  read_at: string | null;
  failed_at: string | null;
  error_code: string | null;
  /** The provider's sub-code of a failure (Meta's `error_subcode`, e.g. `463` for an expired token), else null. */
  error_subcode: string | null;
  /** The provider's own explanation of a failure (Meta's `error_data.details`), else null. */
  error_details: string | null;
  /** The dispatcher's entry of an outbound send once its outcome is unknown (`ambiguous`), for `/outbox/ambiguous`; else null. */
  outbox_entry_id: string | null;
}

/** Data of `messaging.human_message_sent`. */
export interface HumanMessageSentData {
  message_id: string;
  conversation_id: string;
  contact_id: string;
  channel: MessagingChannel;
  operator_id: string | null;
}

/** Data of `messaging.conversation.resolved`. */
export interface ConversationResolvedData {
  conversation_id: string;
  contact_id: string;
  channel: MessagingChannel;
  resolved_by: string | null;
}

/** Data of `messaging.instance.opened | closed | summarized`. */
export interface InstanceChangedData {
  instance_id: string;
  conversation_id: string;
  contact_id: string;
  status: InstanceStatus;
  reason?: InstanceCloseReason | null;
  /** `opened` after a rollover: the instance it replaced. */
  previous_instance_id?: string | null;
  message_count: number;
}

// ---------------------------------------------------------------------------------------------
// Notifications
// ---------------------------------------------------------------------------------------------

export const NOTIFICATION_CHANNELS = ['whatsapp', 'email', 'sms', 'in_app'] as const;
export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[number];
export type NotificationDeliveryStatus = 'pending' | 'sent' | 'failed' | 'skipped';

/** A notification's placeholder values; each is rendered with `String()`. */
export type NotificationVariables = Record<string, string | number | boolean>;

/**
 * The one rule for notification variables, shared by the gateway's DTO and messaging's RPC (which
 * can be called directly): `variables` is absent or a plain object whose values are strings,
 * finite numbers or booleans. An object, array or null would be rendered as "[object Object]",
 * "1,2" or refused later, and reach the contact as such (seed 004 "Scenario 1"). Answers one line
 * per bad value, naming it `variables.<name>`; empty when valid. Pure.
 */
export function notificationVariableProblems(variables: unknown): string[] {
  if (variables === undefined) return [];
  if (typeof variables !== 'object' || variables === null || Array.isArray(variables)) return ['variables must be an object'];
  const problems: string[] = [];
  for (const [name, value] of Object.entries(variables)) {
    const ok = typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
    if (!ok) problems.push(`variables.${name} must be a string, a finite number or a boolean`);
  }
  return problems;
}

export interface NotificationCreateData {
  organization_id: string;
  contact_id: string;
  /** A template key of the organization, or inline `title`/`body`. */
  template_key?: string;
  title?: string;
  body?: string;
  /** Values for `{{name}}` placeholders of the template: strings, finite numbers or booleans (`notificationVariableProblems`). */
  variables?: NotificationVariables;
  channels: NotificationChannel[];
  priority?: 'low' | 'normal' | 'high';
  /** Caller's key: the same key twice is one notification. */
  idempotency_key?: string;
  data?: Record<string, unknown>;
}

/**
 * The approved WhatsApp template a notification template names (Meta's message templates): sent
 * instead of the text when the contact's 24-hour customer-service window is closed. `parameters`
 * are notification variable names; their values fill the template body's `{{1}}`, `{{2}}`, … in
 * this order.
 */
export interface NotificationWhatsAppTemplate {
  /** The template's name at Meta: lowercase letters, digits and `_`. */
  name: string;
  /** The approved translation's language code, as Meta names it (`pt_BR`, `en_US`, `es`). */
  language: string;
  parameters: string[];
}

/** Data of the template create-or-replace RPC (`PUT /notification-templates/{key}`). */
export interface NotificationTemplateData {
  organization_id: string;
  key: string;
  title?: string | null;
  body: string;
  /**
   * Null or absent: the template has none, and a WhatsApp delivery outside the window fails
   * `whatsapp_template_required`. Absent `parameters`: the body has none.
   */
  whatsapp_template?: (Omit<NotificationWhatsAppTemplate, 'parameters'> & { parameters?: string[] }) | null;
}

/** A notification template as the template RPCs answer it. */
export interface NotificationTemplateView {
  key: string;
  title: string | null;
  body: string;
  whatsapp_template: NotificationWhatsAppTemplate | null;
  updated_at: string;
}

export interface NotificationDeliveryView {
  id: string;
  channel: NotificationChannel;
  status: NotificationDeliveryStatus;
  message_id: string | null;
  error_code: string | null;
  updated_at: string;
}

export interface NotificationView {
  id: string;
  organization_id: string;
  contact_id: string;
  template_key: string | null;
  title: string | null;
  body: string;
  priority: string;
  conversation_instance_id: string | null;
  data: Record<string, unknown>;
  deliveries: NotificationDeliveryView[];
  created_at: string;
}

/** Data of `messaging.notification.created`. */
export interface NotificationCreatedData {
  notification_id: string;
  contact_id: string;
  channels: NotificationChannel[];
}

/** Data of `messaging.notification.delivery_updated`. */
export interface NotificationDeliveryUpdatedData {
  notification_id: string;
  delivery_id: string;
  channel: NotificationChannel;
  status: NotificationDeliveryStatus;
  message_id: string | null;
  error_code: string | null;
}

// ---------------------------------------------------------------------------------------------
// Real-time feed
// ---------------------------------------------------------------------------------------------

/** Data of `messaging.stream.read`. */
export interface MessagingStreamReadData {
  organization_id: string;
  /** Last feed id the client saw (the SSE `Last-Event-ID`); absent → only new items. */
  after?: string | null;
  /** Only these types (exact, or a prefix ending in `.`: `messaging.message.`). */
  types?: string[];
  limit?: number;
}

/** One item of the feed: an SSE `id`, `event` (type) and `data`. */
export interface MessagingStreamItem {
  id: string;
  type: string;
  occurred_at: string;
  data: Record<string, unknown>;
}

/**
 * A page of the feed. `cursor` is the id to resume from; `reset` is true when `after` is older
 * than the retention window (the client missed items and should reload).
 */
export interface MessagingStreamPage {
  items: MessagingStreamItem[];
  cursor: string;
  reset: boolean;
}

/** A cursor page of a list answer. */
export interface MessagingPage<T> {
  items: T[];
  next_cursor: string | null;
}
