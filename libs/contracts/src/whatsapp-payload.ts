import { type OutboxMediaPayload, type OutboxPayload, WHATSAPP_TEMPLATE_BUTTON_SUB_TYPES } from './outbox.js';
import { codePointLength } from '@touchpoint/text';
import { WHATSAPP_TEXT_MAX } from './channel-text-limits.js';

/** Graph's limits on message parts (WhatsApp Cloud API message reference); the text limit is in channel-text-limits.ts. */
export const WHATSAPP_CAPTION_MAX = 1024;
/** Largest inline media the dispatcher will upload for a caller (bytes, decoded): Graph's document limit. */
export const WHATSAPP_INLINE_MEDIA_MAX_BYTES = 100 * 1024 * 1024;

const MEDIA_TYPES = ['image', 'document', 'audio', 'video'];
const INTERACTIVE_TYPES = ['button', 'list', 'cta_url', 'flow', 'product', 'product_list'];
const COMPONENT_TYPES = ['header', 'body', 'button', 'footer', 'limited_time_offer', 'carousel'];
/** Components a carousel card may hold (Meta's media and product card carousels). */
const CARD_COMPONENT_TYPES = ['header', 'body', 'button'];
/** Parameter types of template components in Graph's send shape. */
const PARAMETER_TYPES = ['text', 'currency', 'date_time', 'image', 'document', 'video', 'location', 'payload', 'coupon_code', 'limited_time_offer', 'product', 'action'];
/** Meta's limits: at most 10 carousel cards, button positions 0..9. */
const CAROUSEL_MAX_CARDS = 10;
const BUTTON_INDEX_MAX = 9;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNonEmptyString = (v: unknown): v is string => typeof v === 'string' && v.trim().length > 0;
const isHttpUrl = (v: unknown): boolean => typeof v === 'string' && /^https?:\/\/\S+$/.test(v);

/**
 * Checks an outbox payload for WhatsApp. Returns one line per problem; empty
 * when valid. A read receipt must use the key `read:{wamid}` so repeats collapse (seed 004).
 */
export function validateWhatsAppPayload(payload: unknown, idempotencyKey: string): string[] {
  if (!isObject(payload)) return ['payload must be an object'];
  const errors: string[] = [];
  switch (payload.type) {
    case 'text': {
      if (!isNonEmptyString(payload.body)) errors.push('text: body is required');
      else if (codePointLength(payload.body) > WHATSAPP_TEXT_MAX) errors.push(`text: body exceeds ${WHATSAPP_TEXT_MAX} characters`);
      if (payload.preview_url !== undefined && typeof payload.preview_url !== 'boolean') errors.push('text: preview_url must be a boolean');
      break;
    }
    case 'template': {
      if (typeof payload.name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(payload.name)) errors.push('template: name must be lowercase letters, digits and _');
      if (typeof payload.language !== 'string' || !/^[a-z]{2,3}(_[A-Za-z]{2,4})?$/.test(payload.language)) errors.push('template: language must be a locale code like pt_BR');
      if (payload.components !== undefined) {
        if (!Array.isArray(payload.components)) errors.push('template: components must be an array');
        else payload.components.forEach((c, i) => errors.push(...validateComponent(c, i)));
      }
      break;
    }
    case 'media': {
      if (!MEDIA_TYPES.includes(payload.media_type as string)) errors.push(`media: media_type must be one of ${MEDIA_TYPES.join(', ')}`);
      const sources = ['link', 'media_id', 'upload'].filter((k) => payload[k] !== undefined && payload[k] !== null);
      if (sources.length !== 1) errors.push('media: give exactly one of link, media_id, upload');
      if (payload.link !== undefined && !isHttpUrl(payload.link)) errors.push('media: link must be an http(s) URL');
      if (payload.media_id !== undefined && !isNonEmptyString(payload.media_id)) errors.push('media: media_id must be a string');
      if (payload.upload !== undefined) {
        const upload = payload.upload;
        if (!isObject(upload) || typeof upload.data_base64 !== 'string' || !isNonEmptyString(upload.mime_type)) errors.push('media: upload needs data_base64 and mime_type');
        else if ((upload.data_base64.length * 3) / 4 > WHATSAPP_INLINE_MEDIA_MAX_BYTES) errors.push('media: upload is too large');
      }
      if (payload.caption !== undefined) {
        if (typeof payload.caption !== 'string' || codePointLength(payload.caption) > WHATSAPP_CAPTION_MAX) errors.push(`media: caption must be a string of at most ${WHATSAPP_CAPTION_MAX} characters`);
        if (payload.media_type === 'audio') errors.push('media: audio takes no caption');
      }
      if (payload.filename !== undefined && payload.media_type !== 'document') errors.push('media: filename is for documents only');
      break;
    }
    case 'interactive': {
      const interactive = payload.interactive;
      if (!isObject(interactive)) errors.push('interactive: interactive object is required');
      else {
        if (!INTERACTIVE_TYPES.includes(interactive.type as string)) errors.push(`interactive: type must be one of ${INTERACTIVE_TYPES.join(', ')}`);
        if (!isObject(interactive.action)) errors.push('interactive: action is required');
        if (interactive.body !== undefined && !(isObject(interactive.body) && isNonEmptyString(interactive.body.text))) errors.push('interactive: body.text must be a string');
        if (['button', 'list', 'cta_url'].includes(interactive.type as string) && interactive.body === undefined) errors.push('interactive: body.text is required');
      }
      break;
    }
    case 'read_receipt': {
      if (!isNonEmptyString(payload.message_id)) errors.push('read_receipt: message_id is required');
      else if (idempotencyKey !== `read:${payload.message_id}`) errors.push('read_receipt: idempotency_key must be read:{message_id}');
      break;
    }
    default:
      errors.push('payload.type must be one of text, template, media, interactive, read_receipt');
  }
  // Meta's contextual reply (`context.message_id`) goes on any message type it sends; a read receipt is not a message.
  if (payload.reply_to !== undefined) {
    if (payload.type === 'read_receipt') errors.push('read_receipt: reply_to is not allowed');
    else if (!isNonEmptyString(payload.reply_to)) errors.push(`${String(payload.type)}: reply_to must be a message id`);
  }
  return errors;
}

function validateComponent(component: unknown, index: number, where = `components[${index}]`, allowed = COMPONENT_TYPES): string[] {
  if (!isObject(component)) return [`template: ${where} must be an object`];
  const errors: string[] = [];
  if (!allowed.includes(component.type as string)) {
    errors.push(`template: ${where}.type must be one of ${allowed.join(', ')}`);
    return errors;
  }
  if (component.parameters !== undefined) {
    if (!Array.isArray(component.parameters)) errors.push(`template: ${where}.parameters must be an array`);
    else component.parameters.forEach((p, j) => errors.push(...validateParameter(p, `${where}.parameters[${j}]`)));
  }
  switch (component.type) {
    case 'button': {
      // Graph refuses a button component without its kind and its position among the template's buttons.
      if (!WHATSAPP_TEMPLATE_BUTTON_SUB_TYPES.includes(component.sub_type as never)) errors.push(`template: ${where} (button) needs a sub_type, one of ${WHATSAPP_TEMPLATE_BUTTON_SUB_TYPES.join(', ')}`);
      const position = typeof component.index === 'string' && /^\d+$/.test(component.index) ? Number(component.index) : component.index;
      if (!Number.isInteger(position) || (position as number) < 0 || (position as number) > BUTTON_INDEX_MAX) errors.push(`template: ${where} (button) needs an index from 0 to ${BUTTON_INDEX_MAX}`);
      break;
    }
    case 'limited_time_offer': {
      const params = Array.isArray(component.parameters) ? component.parameters : [];
      if (params.length !== 1 || !isObject(params[0]) || params[0].type !== 'limited_time_offer') errors.push(`template: ${where} (limited_time_offer) takes one limited_time_offer parameter`);
      break;
    }
    case 'carousel': {
      if (component.parameters !== undefined) errors.push(`template: ${where} (carousel) takes cards, not parameters`);
      const cards = component.cards;
      if (!Array.isArray(cards) || cards.length === 0 || cards.length > CAROUSEL_MAX_CARDS) {
        errors.push(`template: ${where} (carousel) needs 1 to ${CAROUSEL_MAX_CARDS} cards`);
        break;
      }
      const seen = new Set<number>();
      cards.forEach((card, k) => {
        const at = `${where}.cards[${k}]`;
        if (!isObject(card)) return void errors.push(`template: ${at} must be an object`);
        if (!Number.isInteger(card.card_index) || (card.card_index as number) < 0 || (card.card_index as number) >= CAROUSEL_MAX_CARDS) errors.push(`template: ${at}.card_index must be an integer from 0 to ${CAROUSEL_MAX_CARDS - 1}`);
        else if (seen.has(card.card_index as number)) errors.push(`template: ${at}.card_index repeats ${String(card.card_index)}`);
        else seen.add(card.card_index as number);
        if (!Array.isArray(card.components) || card.components.length === 0) errors.push(`template: ${at}.components must be a non-empty array`);
        else card.components.forEach((c, m) => errors.push(...validateComponent(c, m, `${at}.components[${m}]`, CARD_COMPONENT_TYPES)));
      });
      break;
    }
  }
  return errors;
}

/**
 * Meta's rules for a template text parameter (Cloud API error codes): an empty value is refused
 * with 131008 ("Required parameter is missing"), a value holding a newline or a tab or more than 4
 * spaces in a row with 132018 ("issue with the parameters in your template"). Checked here so such
 * a send is refused at enqueue instead of failing at Meta after it was queued (seed 004 "Enqueue
 * before wire"). Length is left to the template's own limit (a body of 1024 characters), which
 * depends on the approved text and cannot be judged from one parameter.
 */
export function templateTextProblems(text: unknown, where: string): string[] {
  if (typeof text !== 'string') return [`template: ${where}.text must be a string`];
  if (text.trim() === '') return [`template: ${where}.text must not be empty`];
  if (/[\n\r\t]/.test(text)) return [`template: ${where}.text must not contain a newline or a tab`];
  if (/ {5,}/.test(text)) return [`template: ${where}.text must not contain more than 4 consecutive spaces`];
  return [];
}

/** One template parameter: a known type carrying the object of that type (Graph's send shape). */
function validateParameter(p: unknown, where: string): string[] {
  if (!isObject(p) || !isNonEmptyString(p.type)) return [`template: ${where} needs a type`];
  if (!PARAMETER_TYPES.includes(p.type)) return [`template: ${where}.type must be one of ${PARAMETER_TYPES.join(', ')}`];
  switch (p.type) {
    case 'text':
      return templateTextProblems(p.text, where);
    case 'payload':
    case 'coupon_code':
      return isNonEmptyString(p[p.type]) ? [] : [`template: ${where}.${p.type} must be a string`];
    case 'limited_time_offer': {
      const offer = p.limited_time_offer;
      if (!isObject(offer)) return [`template: ${where}.limited_time_offer is required`];
      // expiration_time_ms is a Unix time in ms (UTC) at which the offer ends.
      if (offer.expiration_time_ms !== undefined && (!Number.isInteger(offer.expiration_time_ms) || (offer.expiration_time_ms as number) <= 0)) return [`template: ${where}.limited_time_offer.expiration_time_ms must be a Unix time in ms`];
      return [];
    }
    case 'image':
    case 'document':
    case 'video': {
      const media = p[p.type];
      if (!isObject(media) || (media.link === undefined) === (media.id === undefined)) return [`template: ${where}.${p.type} needs exactly one of link, id`];
      if (media.link !== undefined && !isHttpUrl(media.link)) return [`template: ${where}.${p.type}.link must be an http(s) URL`];
      return [];
    }
    case 'product': {
      const product = p.product;
      return isObject(product) && isNonEmptyString(product.product_retailer_id) && isNonEmptyString(product.catalog_id) ? [] : [`template: ${where}.product needs product_retailer_id and catalog_id`];
    }
    default:
      return isObject(p[p.type]) ? [] : [`template: ${where}.${p.type} must be an object`];
  }
}

/**
 * The Graph `POST /{phone_number_id}/messages` body of a payload (shapes as in the fixtures
 * `send-text-request.json`, `send-template-request.json`, `mark-read-request.json`).
 * `to` is the caller's address as given; `callbackData` (the entry id) goes into
 * `biz_opaque_callback_data`, which Meta echoes on status webhooks (seed 004 "Ambiguity").
 * `mediaId` replaces an inline upload once it has been uploaded.
 */
export function buildWhatsAppMessage(payload: OutboxPayload, to: string, callbackData: string, mediaId?: string): Record<string, unknown> {
  if (payload.type === 'read_receipt') {
    return { messaging_product: 'whatsapp', status: 'read', message_id: payload.message_id };
  }
  const base: Record<string, unknown> = { messaging_product: 'whatsapp', recipient_type: 'individual', to };
  switch (payload.type) {
    case 'text':
      Object.assign(base, { type: 'text', text: { preview_url: payload.preview_url ?? false, body: payload.body } });
      break;
    case 'template':
      Object.assign(base, {
        type: 'template',
        template: { name: payload.name, language: { code: payload.language }, ...(payload.components?.length ? { components: payload.components } : {}) },
      });
      break;
    case 'media':
      Object.assign(base, { type: payload.media_type, [payload.media_type]: mediaObject(payload, mediaId) });
      break;
    case 'interactive':
      Object.assign(base, { type: 'interactive', interactive: payload.interactive });
      break;
  }
  // Contextual reply (Meta "Contextual replies"): one top-level `context` on any message type.
  if (payload.reply_to) base.context = { message_id: payload.reply_to };
  base.biz_opaque_callback_data = callbackData;
  return base;
}

function mediaObject(payload: OutboxMediaPayload, mediaId?: string): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  if (payload.link) object.link = payload.link;
  else object.id = payload.media_id ?? mediaId;
  if (payload.caption !== undefined) object.caption = payload.caption;
  if (payload.filename !== undefined) object.filename = payload.filename ?? payload.upload?.filename;
  else if (payload.media_type === 'document' && payload.upload?.filename) object.filename = payload.upload.filename;
  return object;
}
