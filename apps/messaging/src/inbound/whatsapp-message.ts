import type { NewAttachment } from '../messages/messages.repository.js';

/** What messaging keeps of one Meta inbound message (`value.messages[]`). */
export interface ParsedWhatsAppMessage {
  wamid: string;
  from: string;
  /** Unix seconds → Date. */
  sentAt: Date;
  type: string;
  /** Text, caption, button title or emoji: what a keyword or opt-out rule reads. */
  text: string | null;
  /** The wamid this one answers or reacts to. */
  inReplyTo: string | null;
  attachments: NewAttachment[];
  /** Whether the text may carry an opt-out (typed text and buttons; not captions or reactions). */
  typedText: boolean;
}

/** A media object of a Meta message (image, video, audio, document, sticker). */
interface MetaMedia {
  id?: unknown;
  mime_type?: unknown;
  sha256?: unknown;
  url?: unknown;
  caption?: unknown;
  filename?: unknown;
}

/**
 * The fields of a Meta `value.messages[]` item that this file reads. Every leaf is `unknown`: a
 * provider may send any type there, and `str`/`num` take only what has the documented one.
 */
interface MetaMessage {
  id?: unknown;
  from?: unknown;
  type?: unknown;
  timestamp?: unknown;
  context?: { id?: unknown };
  text?: { body?: unknown };
  interactive?: { button_reply?: { title?: unknown }; list_reply?: { title?: unknown } };
  button?: { text?: unknown };
  reaction?: { emoji?: unknown; message_id?: unknown };
  location?: { latitude?: unknown; longitude?: unknown; name?: unknown; address?: unknown };
  image?: MetaMedia;
  video?: MetaMedia;
  audio?: MetaMedia;
  document?: MetaMedia;
  sticker?: MetaMedia;
}

/** Longest provider message id we take (Meta's wamids are about 60 characters; AMQP ids stop at 255). */
export const MAX_WAMID_LENGTH = 255;

/** A string field as text: other types (a number where Meta sends a string) become null, NUL characters go. */
const str = (value: unknown): string | null => (typeof value === 'string' ? value.replaceAll('\u0000', '') : null);
/** A coordinate: finite numbers only. */
const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/**
 * Why a `value.messages[]` item cannot be taken at all (null when it can): no id or an id out of
 * bounds, or no sender that is a string. A message that fails here is ignored, never retried.
 */
export function unusableWhatsAppMessage(m: unknown): string | null {
  const item = m as MetaMessage | null;
  if (!item || typeof item !== 'object') return 'not an object';
  if (typeof item.id !== 'string' || item.id.trim() === '' || item.id.length > MAX_WAMID_LENGTH) return 'no usable id';
  if (typeof item.from !== 'string' || item.from.trim() === '') return 'no sender';
  return null;
}

const MEDIA_TYPES = ['image', 'video', 'audio', 'document', 'sticker'] as const;
const isMediaType = (type: string): type is (typeof MEDIA_TYPES)[number] => (MEDIA_TYPES as readonly string[]).includes(type);

/**
 * Reads one inbound message of a Meta webhook in its documented shapes (fixtures/meta): text,
 * media with caption, interactive button/list replies, template quick-reply buttons, reactions,
 * locations and contacts. Unknown types keep their type with no text.
 */
export function parseWhatsAppMessage(m: MetaMessage): ParsedWhatsAppMessage {
  const type = str(m.type) ?? 'unknown';
  const seconds = Number(m.timestamp);
  // A timestamp out of Date's range (or in the future by more than a day) is not Meta's: use now.
  const sentAtMs = seconds * 1000;
  const base = {
    wamid: String(m.id),
    from: String(m.from),
    sentAt: Number.isFinite(sentAtMs) && sentAtMs > 0 && sentAtMs < Date.now() + 86_400_000 ? new Date(sentAtMs) : new Date(),
    type,
    inReplyTo: str(m.context?.id),
    attachments: [] as NewAttachment[],
    typedText: false,
  };
  if (type === 'text') return { ...base, text: str(m.text?.body), typedText: true };
  if (isMediaType(type)) {
    const media = m[type] ?? {};
    return {
      ...base,
      text: str(media.caption),
      attachments: [{ media_type: type, mime_type: str(media.mime_type), provider_media_id: str(media.id), sha256: str(media.sha256), url: str(media.url), caption: str(media.caption), filename: str(media.filename) }],
    };
  }
  if (type === 'interactive') {
    const reply = m.interactive?.button_reply ?? m.interactive?.list_reply;
    return { ...base, text: str(reply?.title), typedText: true };
  }
  if (type === 'button') return { ...base, text: str(m.button?.text), typedText: true };
  if (type === 'reaction') return { ...base, text: str(m.reaction?.emoji), inReplyTo: str(m.reaction?.message_id) ?? base.inReplyTo };
  if (type === 'location') {
    const l = m.location ?? {};
    const [lat, lng] = [num(l.latitude), num(l.longitude)];
    return { ...base, text: [str(l.name), str(l.address), lat !== null && lng !== null ? `${lat},${lng}` : null].filter(Boolean).join(' · ') || null };
  }
  return { ...base, text: null };
}
