// Over 400 lines on purpose: declarations only (one service's contract: names, data shapes, RPC patterns), no rules to split.
/**
 * Contract of the outbox-dispatcher (DESIGN §4, seed 004 "Outbound WhatsApp outbox & dispatcher"):
 * the commands and RPCs that queue, cancel and resolve sends, the events that report their
 * outcome, the sender (business number) events, and the provider-webhook RPCs the gateway calls.
 *
 * Every event and command name and its data shape is defined here once; producers and consumers
 * import them from `@touchpoint/contracts`.
 */

/** Channels a sender and an entry can have. Only `whatsapp` is wired today. */
export const OUTBOX_CHANNELS = ['whatsapp', 'email', 'linkedin'] as const;
export type OutboxChannel = (typeof OUTBOX_CHANNELS)[number];

/** Lifecycle of one outbox entry. */
export const OUTBOX_ENTRY_STATUSES = ['pending', 'sending', 'accepted', 'failed', 'ambiguous', 'cancelled'] as const;
export type OutboxEntryStatus = (typeof OUTBOX_ENTRY_STATUSES)[number];

/**
 * How a failed attempt was classified (seed 004 "Error classification"), plus the reasons an entry
 * fails without a provider code (`suppressed`, `local_execution`, `sender_unavailable`).
 */
export const OUTBOX_CLASSIFICATIONS = [
  'rate_limited', // 131056, 130429, 80007: retry, honouring Retry-After
  'transient', // 2, 4, 131000, 131016, 131057, 133004, 5xx: ordinary backoff
  'quality_cooldown', // 131064: retry only after a long cooldown
  'account_restricted', // 131048, 368, 130497, 131031: permanent
  'recipient_undeliverable', // 131026: permanent
  'permanent', // any other 4xx
  'ambiguous', // timeout / network: outcome unknown, never retried blindly
  'local_execution', // a local fault before any request existed: permanent
  'suppressed', // the recipient is on the do-not-contact list
  'sender_unavailable', // the sender was removed or disconnected
  'sender_unauthorized', // 190: the sender's access token expired or was revoked; the sender is disconnected
] as const;
export type OutboxClassification = (typeof OUTBOX_CLASSIFICATIONS)[number];

// ---------------------------------------------------------------------------------------------
// Payloads
// ---------------------------------------------------------------------------------------------

/**
 * `reply_to` quotes an earlier message (its wamid) as Meta's contextual reply (`context.message_id`).
 * Meta takes it on every message type it sends except reactions; read receipts are not messages.
 */
export interface OutboxReplyTo {
  reply_to?: string;
}

/** A text message. `preview_url` renders a link preview. */
export interface OutboxTextPayload extends OutboxReplyTo {
  type: 'text';
  /** 1..4096 characters (Graph's limit). */
  body: string;
  preview_url?: boolean;
}

/** One parameter of a template component, in Graph's shape. */
export type OutboxTemplateParameter =
  | { type: 'text'; text: string; parameter_name?: string }
  | { type: 'currency'; currency: { fallback_value: string; code: string; amount_1000: number } }
  | { type: 'date_time'; date_time: Record<string, unknown> & { fallback_value: string } }
  | { type: 'image' | 'document' | 'video'; image?: OutboxMediaRef; document?: OutboxMediaRef & { filename?: string }; video?: OutboxMediaRef }
  | { type: 'payload'; payload: string }
  | { type: 'coupon_code'; coupon_code: string }
  | { type: 'limited_time_offer'; limited_time_offer: { expiration_time_ms: number } }
  | { type: 'product'; product: { product_retailer_id: string; catalog_id: string } }
  | { type: 'action'; action: Record<string, unknown> }
  | { type: 'location'; location: { latitude: number | string; longitude: number | string; name?: string; address?: string } };

/** A media reference: exactly one of `link` (https URL) or `id` (an uploaded media id). */
export interface OutboxMediaRef {
  link?: string;
  id?: string;
}

/** Button kinds of a template `button` component (Graph's `sub_type`). */
export const WHATSAPP_TEMPLATE_BUTTON_SUB_TYPES = ['quick_reply', 'url', 'copy_code', 'flow', 'catalog', 'mpm', 'voice_call'] as const;

/**
 * One template component with its parameters, in Graph's send shape: `header`, `body`, `button`
 * (with `sub_type` and its 0-based position `index`), `limited_time_offer` (one
 * `limited_time_offer` parameter), or `carousel` (`cards`, each with `card_index` and its own
 * header/body/button components).
 */
export interface OutboxTemplateComponent {
  type: 'header' | 'body' | 'button' | 'footer' | 'limited_time_offer' | 'carousel';
  sub_type?: (typeof WHATSAPP_TEMPLATE_BUTTON_SUB_TYPES)[number];
  index?: number | string;
  parameters?: OutboxTemplateParameter[];
  cards?: { card_index: number; components: OutboxTemplateComponent[] }[];
}

/** An approved template. `language` is the template's locale code (`pt_BR`, `en_US`). */
export interface OutboxTemplatePayload extends OutboxReplyTo {
  type: 'template';
  name: string;
  language: string;
  components?: OutboxTemplateComponent[];
}

/**
 * An image, document, audio or video, by `link`, by an uploaded media `media_id`, or as inline
 * bytes (`upload`) that the dispatcher uploads to the provider while preparing the send.
 * Exactly one of `link`, `media_id`, `upload`. `caption` is not allowed on audio.
 */
export interface OutboxMediaPayload extends OutboxReplyTo {
  type: 'media';
  media_type: 'image' | 'document' | 'audio' | 'video';
  link?: string;
  media_id?: string;
  upload?: { data_base64: string; mime_type: string; filename?: string };
  caption?: string;
  /** Documents only: the file name the recipient sees. */
  filename?: string;
}

/**
 * An interactive message (buttons, list, CTA URL, flow), given as Graph's `interactive` object
 * (`{ type, body: { text }, action, header?, footer? }`).
 */
export interface OutboxInteractivePayload extends OutboxReplyTo {
  type: 'interactive';
  interactive: { type: 'button' | 'list' | 'cta_url' | 'flow' | 'product' | 'product_list'; body?: { text: string }; action: Record<string, unknown>; [key: string]: unknown };
}

/**
 * Marks an inbound message read. Rides the recipient's pacing pair, one attempt only; use the
 * key `read:{wamid}` (seed 004 "Read receipts").
 */
export interface OutboxReadReceiptPayload {
  type: 'read_receipt';
  /** The inbound message's wamid. */
  message_id: string;
}

export type OutboxPayload = OutboxTextPayload | OutboxTemplatePayload | OutboxMediaPayload | OutboxInteractivePayload | OutboxReadReceiptPayload;
export type OutboxPayloadType = OutboxPayload['type'];

// ---------------------------------------------------------------------------------------------
// Commands and RPCs
// ---------------------------------------------------------------------------------------------

/** Bus commands the dispatcher consumes (sent through the caller's transactional outbox). */
export const OutboxCommands = {
  /** `OutboxEnqueueData` → one entry; a repeat of the key is a no-op. */
  Enqueue: 'outbox.enqueue',
  /** `OutboxCancelData` → the pending entry becomes cancelled (not once claimed). */
  Cancel: 'outbox.cancel',
  /**
   * `OutboxSuppressionData` → the value is never sent to again on that channel; its queued entries
   * that have not started an attempt are cancelled (`reason: 'suppressed'`) in the same transaction.
   */
  Suppress: 'outbox.suppress',
  /** `OutboxSuppressionData` → removes a suppression. */
  Unsuppress: 'outbox.unsuppress',
} as const;

/** RPC patterns the dispatcher answers. */
export const OutboxRpc = {
  /** `OutboxEnqueueData` → `OutboxEnqueueResult`; throws an `OutboxEnqueueErrorCode`. */
  Enqueue: 'outbox.enqueue',
  /** `OutboxCancelData` → `OutboxCancelResult`. */
  Cancel: 'outbox.cancel',
  /** `{ organization_id, entry_id }` → `OutboxEntryView`; `not_found` otherwise. */
  GetEntry: 'outbox.entry.get',
  /**
   * `OutboxEntriesByKeyData` → `{ items: OutboxEntryView[] }`: the entries of up to
   * `OUTBOX_ENTRIES_BY_KEY_MAX` idempotency keys of one organization (keys with no entry are
   * simply absent); throws `validation_failed`. Messaging's outcome sweep re-reads what the
   * dispatcher settled when an `outbox.entry.*` event never reached its message.
   */
  GetEntriesByKey: 'outbox.entries.by_key',
  /**
   * `OutboxAmbiguousListData` → `OutboxAmbiguousPage` (ambiguous entries, oldest first, keyset
   * cursor); throws `invalid_cursor`, `validation_failed` (limit).
   */
  ListAmbiguous: 'outbox.ambiguous.list',
  /** `OutboxResolveData` → `OutboxResolveResult` (an operator settles an ambiguous entry; refusals are outcomes: the CLI). */
  ResolveAmbiguous: 'outbox.ambiguous.resolve',
  /**
   * `OutboxResolveData` with `organization_id` → `OutboxResolveResult` (`resolved` | `resolved_failed`):
   * the same resolution, refusals thrown instead (the REST API): `not_found` (also another
   * organization's entry), `not_ambiguous` (details.status), `invalid_resolution`.
   */
  ResolveAmbiguousOrFail: 'outbox.ambiguous.resolve_or_fail',
  /** `WhatsAppStatusBatch` → `{ stored: number }`, answered only after the statuses are durable. */
  WhatsAppStatuses: 'outbox.whatsapp.statuses',
  /**
   * `WhatsAppWebhookErrorBatch` → `{ stored: number; paused_until: string | null }`: the
   * webhook-level `value.errors[]` of one change (asynchronous errors about the number, not about
   * one message), answered once stored; a rate-limit code slows the number's sends.
   */
  WhatsAppWebhookErrors: 'outbox.whatsapp.webhook_errors',
  /** `OutboxSenderCreateData` → `OutboxSenderView`. */
  SenderCreate: 'outbox.senders.create',
  /** `{ organization_id, channel? }` → `{ items: OutboxSenderView[] }`. */
  SenderList: 'outbox.senders.list',
  /** `{ organization_id, sender_id }` → `OutboxSenderView`. */
  SenderGet: 'outbox.senders.get',
  /** `OutboxSenderUpdateData` → `OutboxSenderView`. */
  SenderUpdate: 'outbox.senders.update',
  /** `{ organization_id, sender_id }` → `{ removed: true }`. */
  SenderRemove: 'outbox.senders.remove',
  /** `{ phone_number_id }` → `{ organization_id, sender_id }`, both null when nobody owns the number. */
  SenderLookupByPhoneNumberId: 'outbox.senders.lookup_whatsapp',
} as const;

/** Data of `outbox.enqueue` (command and RPC). */
export interface OutboxEnqueueData {
  organization_id: string;
  channel: OutboxChannel;
  /** The sender to use; absent/null → the organization's default connected sender of the channel. */
  sender_id?: string | null;
  /** The recipient's address as the caller has it (`+55 92 98888-7777`, `5592988887777`). */
  to: string;
  /** Unique per organization; the same key twice resolves to one entry. */
  idempotency_key: string;
  payload: OutboxPayload;
  /** Correlation fields echoed on every outcome event and log line (message_id, conversation_id...). */
  log_context?: Record<string, string | number>;
  /** Who asked (service name), for logs and triage. */
  requester?: string;
  /**
   * The requester cancels this send when the person replies (`MessagingSendData.stop_on_reply`):
   * while pending it is held for `OUTBOX_REPLY_HOLD_MS` after a `messaging.inbound.acknowledged`
   * from its recipient. Default false (never held).
   */
  stop_on_reply?: boolean;
}

/** Answer of the `outbox.enqueue` RPC. `created` is false when the key already had an entry. */
export interface OutboxEnqueueResult {
  entry_id: string;
  status: OutboxEntryStatus;
  created: boolean;
}

/** Most keys one `outbox.entries.by_key` call may ask about. */
export const OUTBOX_ENTRIES_BY_KEY_MAX = 500;

/** Data of `outbox.entries.by_key`. */
export interface OutboxEntriesByKeyData {
  organization_id: string;
  /** 1..`OUTBOX_ENTRIES_BY_KEY_MAX` keys. */
  idempotency_keys: string[];
}

/** Data of `outbox.cancel`. */
export interface OutboxCancelData {
  organization_id: string;
  idempotency_key: string;
}

/**
 * Answer of the `outbox.cancel` RPC: `cancelled` (was pending), `not_cancellable` (claimed or
 * settled; `status` says which), `cancelled_in_advance` (no entry yet: one enqueued later with this
 * key is written cancelled and never sent).
 */
export interface OutboxCancelResult {
  outcome: 'cancelled' | 'not_cancellable' | 'cancelled_in_advance';
  entry_id?: string;
  status?: OutboxEntryStatus;
}

/** Data of `outbox.suppress` / `outbox.unsuppress`. `value` is a phone number, email or profile id. */
export interface OutboxSuppressionData {
  organization_id: string;
  channel: OutboxChannel;
  value: string;
  reason?: string;
  /** A person's words on why (added or removed by hand); kept with the row, or with its removal. */
  note?: string;
  /** Who asked (`member:<id>` for a person through the gateway); absent for code. */
  actor?: string;
}

/** Data of `outbox.suppressions.list`: one page of the organization's do-not-contact list. */
export interface OutboxSuppressionListData {
  organization_id: string;
  /** Part of the value (an email, phone digits, a LinkedIn id) or of its note, any case. */
  q?: string;
  channel?: OutboxChannel;
  /** 1..200, default 50. */
  limit?: number;
  /** `next_cursor` of the previous page (issued for the same q and channel). */
  cursor?: string;
}

/** One do-not-contact row as the API shows it. */
export interface OutboxSuppressionView {
  id: string;
  channel: OutboxChannel;
  /** The value as the list keys it (phone digits, a lower-cased email, a profile id). */
  value: string;
  /** Why code or a person put it there: `opt_out`, `unsubscribed`, `bounced`, `manual`, ... */
  reason: string | null;
  note: string | null;
  /** `member:<id>` when a person added it; null when code did. */
  added_by: string | null;
  /** ISO-8601, UTC. */
  created_at: string;
}

/** Answer of `outbox.suppressions.list`: newest first. */
export interface OutboxSuppressionPage {
  items: OutboxSuppressionView[];
  next_cursor: string | null;
}

/** Answer of `outbox.suppressions.remove`. */
export interface OutboxSuppressionRemoveResult {
  /** False when the value was not on the list (nothing removed, nothing recorded). */
  removed: boolean;
  channel: string;
  value: string;
  /** The note kept with the removal (null when none was given, or nothing was removed). */
  note: string | null;
  /** When the row was removed, ISO-8601 UTC; null when nothing was removed. */
  removed_at: string | null;
}

/** Data of `outbox.ambiguous.list`. */
export interface OutboxAmbiguousListData {
  /** Absent → platform operator (every organization; the CLI). */
  organization_id?: string;
  /** 1..1000, default 100. */
  limit?: number;
  /** `next_cursor` of the previous page. */
  cursor?: string;
}

/** Answer of `outbox.ambiguous.list`. `next_cursor` is null on the last page. */
export interface OutboxAmbiguousPage {
  items: OutboxEntryView[];
  next_cursor: string | null;
}

/** Data of `outbox.ambiguous.resolve` (operator). */
export interface OutboxResolveData {
  /** Absent → platform operator (any organization). */
  organization_id?: string;
  entry_id: string;
  status: 'accepted' | 'rejected';
  note: string;
  /** Who resolved it (CLI user). */
  actor?: string;
}

/**
 * The six outcomes of resolving an ambiguous send (seed 004 "Ambiguity is resolved by
 * correlation"): `resolved` (settled accepted), `resolved_failed` (settled failed),
 * `evidence_recorded` (still sending: kept for lease recovery), `not_ambiguous`, `not_found`,
 * `invalid_resolution`.
 */
export const OUTBOX_RESOLUTION_OUTCOMES = ['resolved', 'resolved_failed', 'evidence_recorded', 'not_ambiguous', 'not_found', 'invalid_resolution'] as const;
export type OutboxResolutionOutcome = (typeof OUTBOX_RESOLUTION_OUTCOMES)[number];

export interface OutboxResolveResult {
  outcome: OutboxResolutionOutcome;
  entry_id: string;
  status?: OutboxEntryStatus;
}

/** An entry as RPC answers show it (no credentials). */
export interface OutboxEntryView {
  id: string;
  organization_id: string;
  channel: OutboxChannel;
  sender_id: string | null;
  to: string;
  pacing_key: string;
  idempotency_key: string;
  payload_type: OutboxPayloadType;
  status: OutboxEntryStatus;
  attempts: number;
  max_attempts: number;
  next_attempt_at: string | null;
  provider_message_id: string | null;
  last_error_code: string | null;
  last_classification: OutboxClassification | null;
  /** The provider's (or the local) reason of the last failure, when there is one. */
  last_error_message?: string | null;
  log_context: Record<string, string | number>;
  created_at: string;
  updated_at: string;
}

/**
 * Error codes an enqueue can fail with (nothing is written). The same strings are in
 * `@touchpoint/errors` `ErrorCode`.
 */
export const OutboxEnqueueErrorCode = {
  /** The payload is not one of the shapes above, or breaks a limit; `details.errors` lists why. */
  InvalidPayload: 'invalid_payload',
  /** `to` is not a phone number (after canonicalisation to E.164 digits). */
  InvalidRecipient: 'invalid_recipient',
  /** No such sender in the organization, or no default sender for the channel. */
  SenderNotFound: 'sender_not_found',
  /** The sender exists but is disconnected. */
  SenderDisconnected: 'sender_disconnected',
  /** The channel has no adapter yet. */
  UnsupportedChannel: 'unsupported_channel',
  /** Generic shape errors (missing organization_id, idempotency_key...). */
  ValidationFailed: 'validation_failed',
} as const;
export type OutboxEnqueueErrorCode = (typeof OutboxEnqueueErrorCode)[keyof typeof OutboxEnqueueErrorCode];

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

/** Events the dispatcher publishes (transactional outbox). */
export const OutboxEvents = {
  /** The provider accepted the send (`provider_message_id` = wamid). */
  EntryAccepted: 'outbox.entry.accepted',
  /** Terminal failure: permanent error, attempts exhausted, suppressed, or a lost read receipt. */
  EntryFailed: 'outbox.entry.failed',
  /** Outcome unknown (timeout/network); never retried; waits for correlation or an operator. */
  EntryAmbiguous: 'outbox.entry.ambiguous',
  /** Cancelled before it was claimed: by key (`outbox.cancel`) or because its address was suppressed (`reason`). */
  EntryCancelled: 'outbox.entry.cancelled',
  /** An ambiguous entry was settled; `resolution` says accepted or rejected. */
  EntryResolved: 'outbox.entry.resolved',
  /**
   * A provider delivery status (sent, delivered, read, failed) was recorded, with the entry it
   * belongs to when known, so messaging can move its message row by `provider_message_id`.
   */
  ProviderStatusRecorded: 'outbox.provider_status.recorded',
  SenderConnected: 'outbox.sender.connected',
  SenderDisconnected: 'outbox.sender.disconnected',
  SenderRemoved: 'outbox.sender.removed',
  SenderUpdated: 'outbox.sender.updated',
} as const;

/** Why an entry was cancelled (`OutboxEntryEventData.reason`). */
export type OutboxCancelReason = 'requested' | 'suppressed';

/** Data of every `outbox.entry.*` event. */
export interface OutboxEntryEventData {
  entry_id: string;
  idempotency_key: string;
  channel: OutboxChannel;
  /** The caller's recipient address as given. */
  to: string;
  sender_id?: string | null;
  payload_type?: OutboxPayloadType;
  provider_message_id?: string | null;
  classification?: OutboxClassification | null;
  /** The provider's error code (as text), or a local reason. */
  error_code?: string | null;
  error_message?: string | null;
  /** Graph's `error_subcode` (as text) and `error_data.details`, when the provider gave them. */
  error_subcode?: string | null;
  error_details?: string | null;
  http_status?: number | null;
  /**
   * `outbox.entry.cancelled` only: why — `requested` (an `outbox.cancel` for its key) or
   * `suppressed` (its address was put on the do-not-contact list before its attempt started).
   */
  reason?: OutboxCancelReason;
  /** `outbox.entry.resolved` only: how the ambiguous entry settled, and who settled it. */
  resolution?: 'accepted' | 'rejected';
  resolved_by?: 'provider' | 'operator';
  attempts?: number;
  log_context: Record<string, string | number>;
}

/** Data of `outbox.provider_status.recorded`. */
export interface OutboxProviderStatusEventData {
  channel: OutboxChannel;
  provider_message_id: string;
  status: WhatsAppDeliveryStatus | string;
  /** ISO-8601 UTC, from the provider's timestamp. */
  provider_timestamp: string;
  recipient: string | null;
  entry_id: string | null;
  idempotency_key: string | null;
  log_context: Record<string, string | number> | null;
  error_code?: string | null;
  error_message?: string | null;
  /** `errors[0].error_data.details` of a failed status. */
  error_details?: string | null;
}

export type OutboxSenderStatus = 'connected' | 'disconnected' | 'removed';

/** Data of every `outbox.sender.*` event (never a credential). */
export interface OutboxSenderEventData {
  sender_id: string;
  channel: OutboxChannel;
  phone_number_id?: string | null;
  display_phone_number?: string | null;
  /** Email address or LinkedIn account id, for the other channels. */
  address?: string | null;
  is_default?: boolean;
  status: OutboxSenderStatus;
  /**
   * Why the dispatcher disconnected the sender by itself: `token_invalid` (Graph answered 190, the
   * access token expired or was revoked). Absent when a person changed the status.
   */
  reason?: 'token_invalid' | null;
  /** The provider's error code and subcode behind `reason`. */
  error_code?: string | null;
  error_subcode?: string | null;
}

// ---------------------------------------------------------------------------------------------
// Senders
// ---------------------------------------------------------------------------------------------

/** Data of `outbox.senders.create`. `access_token` is stored encrypted and never returned. */
export interface OutboxSenderCreateData {
  organization_id: string;
  channel: OutboxChannel;
  phone_number_id: string;
  display_phone_number: string;
  business_account_id: string;
  access_token: string;
  is_default?: boolean;
  status?: 'connected' | 'disconnected';
  label?: string;
}

/** Data of `outbox.senders.update`: any of these; `access_token` replaces the stored one. */
export interface OutboxSenderUpdateData {
  organization_id: string;
  sender_id: string;
  display_phone_number?: string;
  business_account_id?: string;
  access_token?: string;
  is_default?: boolean;
  status?: 'connected' | 'disconnected';
  label?: string | null;
}

/** A sender as answers show it. */
export interface OutboxSenderView {
  id: string;
  organization_id: string;
  channel: OutboxChannel;
  label: string | null;
  phone_number_id: string | null;
  display_phone_number: string | null;
  business_account_id: string | null;
  status: 'connected' | 'disconnected';
  is_default: boolean;
  /** True when a credential is stored (its value is never returned). */
  has_credentials: boolean;
  created_at: string;
  updated_at: string;
}

// ---------------------------------------------------------------------------------------------
// Meta webhooks (gateway → owning service)
// ---------------------------------------------------------------------------------------------

/** The statuses a WhatsApp status webhook reports. */
export type WhatsAppDeliveryStatus = 'sent' | 'delivered' | 'read' | 'failed';

/** One status of a Meta status webhook (`entry[].changes[].value.statuses[]`), as Meta sends it. */
export interface WhatsAppStatus {
  id: string;
  status: string;
  /** Unix seconds, as a string. */
  timestamp: string;
  recipient_id?: string;
  biz_opaque_callback_data?: string;
  errors?: { code: number; title?: string; message?: string; error_data?: { details?: string } }[];
  [key: string]: unknown;
}

/** Data of `outbox.whatsapp.statuses`: the statuses of one number's webhook changes (the gateway hands over those that arrive together as one). */
export interface WhatsAppStatusBatch {
  phone_number_id: string;
  display_phone_number?: string;
  business_account_id?: string;
  statuses: WhatsAppStatus[];
}

/** One webhook-level error (`entry[].changes[].value.errors[]`), as Meta sends it. */
export interface WhatsAppWebhookError {
  code: number;
  title?: string;
  message?: string;
  error_data?: { details?: string };
  href?: string;
}

/** Data of `outbox.whatsapp.webhook_errors`. */
export interface WhatsAppWebhookErrorBatch {
  phone_number_id: string;
  business_account_id?: string;
  errors: WhatsAppWebhookError[];
}

/** RPC patterns the messaging service answers for WhatsApp ingress. */
export const MessagingWhatsAppRpc = {
  /**
   * `WhatsAppInboundBatch` → `WhatsAppInboundAccepted`: inbound messages of one webhook change; the
   * answer comes only once they are durably stored (the gateway then answers Meta 200).
   */
  Inbound: 'messaging.inbound.whatsapp',
} as const;

/** Data of `messaging.inbound.whatsapp`: `value` of one `messages` change, as Meta sends it. */
export interface WhatsAppInboundBatch {
  phone_number_id: string;
  display_phone_number?: string;
  business_account_id?: string;
  contacts: { wa_id: string; profile?: { name?: string } }[];
  messages: ({ from: string; id: string; timestamp: string; type: string } & Record<string, unknown>)[];
}

/** Answer of `messaging.inbound.whatsapp`: what was done with the messages of one webhook change. */
export interface WhatsAppInboundAccepted {
  /** New receipts stored (acknowledged; messaging's worker makes them messages). */
  accepted: number;
  /** Provider ids already waiting as receipts. */
  duplicates: number;
  ignored: number;
}

// ---------------------------------------------------------------------------------------------
// Email and LinkedIn provider accounts, the daily prospect cap (seed 003 §4.6, §6)
// ---------------------------------------------------------------------------------------------

/** RPCs of the dispatcher's email (Nylas) and LinkedIn (Unipile) senders and of the prospect cap. */
export const OutboxAccountRpc = {
  /** `OutboxAccountCreateData` → `OutboxSenderView`: a mailbox (Nylas grant) or a LinkedIn account (Unipile). */
  Create: 'outbox.senders.create_account',
  /** `OutboxProspectCapData` → `OutboxProspectCapView`. */
  ProspectCapSet: 'outbox.prospect_cap.set',
  /** `{ organization_id }` → `OutboxProspectCapView`: the organization's cap now (its own or the default). */
  ProspectCapGet: 'outbox.prospect_cap.get',
  /**
   * `OutboxProspectCapCheckData` → `OutboxProspectCapCheckResult`: would an email to `to` be refused
   * by the cap right now? A read only (the claim at the wire stays the authority); an interactive
   * send asks it first so it can answer 429 `prospect_send_cap_reached` at once (seed 003 §6).
   */
  ProspectCapCheck: 'outbox.prospect_cap.check',
  /**
   * `OutboxSuppressionData` (with the person's `note` and `actor`) → `OutboxSuppressionRemoveResult`
   * (`removed` false when the value was not on the list): a person removes a do-not-contact row
   * (seed 003 §5: never cleared by code; a user removes one, e.g. when asked to be contacted again).
   * The removal is recorded with its note.
   */
  SuppressionRemove: 'outbox.suppressions.remove',
  /** `OutboxSuppressionListData` → `OutboxSuppressionPage`: search the do-not-contact list, newest first. */
  SuppressionList: 'outbox.suppressions.list',
  /**
   * `OutboxSuppressionData` → `OutboxSuppressionAddResult`: puts a value on the do-not-contact list
   * now and cancels its queued sends, answered once committed and once the sends that had already
   * started have the provider's answer (at most 0.8 s; `in_flight` counts any still out). Every stop is put in force with it
   * before it is acknowledged (`putSuppressionsInForce` in libs/runtime): messaging for an opt-out by
   * reply, outreach for the unsubscribe link and a bounce; an admin adds one through `POST /suppressions`.
   */
  SuppressionAdd: 'outbox.suppressions.add',
} as const;

/** Answer of `outbox.suppressions.add`. */
export interface OutboxSuppressionAddResult {
  channel: string;
  /** The value as the list keys it (phone digits, a lower-cased email, a profile id). */
  value: string;
  /** False when it was on the list already. */
  created: boolean;
  /** Queued entries cancelled with it. */
  cancelled_entry_ids: string[];
  /** Sends that had passed the pre-wire gate before it and still had no provider answer when it was answered (0 normally; their requests may still be on their way). */
  in_flight: number;
}

export interface OutboxAccountCreateData {
  organization_id: string;
  channel: 'email' | 'linkedin';
  /** The Nylas `grant_id` or the Unipile `account_id` (webhooks are routed by it). */
  account_id: string;
  /** The mailbox address, or the account's LinkedIn member id (`ACo…`). */
  address: string;
  /** The Nylas application API key or the Unipile `X-API-KEY`; stored encrypted, never returned. */
  api_key: string;
  /** Nylas grant provider (`google`, `microsoft`, `imap`, …): List-Unsubscribe goes only on Google grants. */
  provider?: string;
  label?: string;
  is_default?: boolean;
}

/** The organization's daily prospect cap (seed 003 §6). */
export interface OutboxProspectCapView {
  organization_id: string;
  /** Prospect emails per mailbox and UTC day in force; 0 stops every prospect send. */
  prospect_emails_per_day: number;
  /** True when the organization has no value of its own and the default (30) applies. */
  is_default: boolean;
}

export interface OutboxProspectCapData {
  organization_id: string;
  /** Prospect emails per mailbox and UTC day; 0 stops every prospect send; null → the default (30). */
  prospect_emails_per_day: number | null;
}

/** LinkedIn relations learnt from Unipile (`new_relation`: an invitation was accepted). */
export const OutboxLinkedinRpc = {
  /** `LinkedinRelationAcceptedData` → `{ stored: boolean; sender_id: string | null }` (false: nobody owns the account). */
  RelationAccepted: 'outbox.linkedin.relation_accepted',
} as const;

export const OutboxLinkedinEvents = {
  /** `LinkedinRelationEventData`: a person accepted the account's invitation (or connected otherwise). */
  RelationAccepted: 'outbox.linkedin.relation_accepted',
} as const;

export interface LinkedinRelationAcceptedData {
  /** The Unipile account id. */
  account_id: string;
  /** The person's LinkedIn member id (`ACo…`). */
  provider_id: string;
  public_identifier?: string | null;
  profile_url?: string | null;
}

export interface LinkedinRelationEventData {
  sender_id: string;
  provider_id: string;
  public_identifier: string | null;
}

export interface OutboxProspectCapCheckData {
  organization_id: string;
  to: string;
  /** The mailbox; absent → the organization's default email sender. */
  sender_id?: string | null;
}

export interface OutboxProspectCapCheckResult {
  allowed: boolean;
  prospect: boolean;
  /** Prospect emails the mailbox sent today (UTC) and its cap. */
  sent: number;
  cap: number;
}
