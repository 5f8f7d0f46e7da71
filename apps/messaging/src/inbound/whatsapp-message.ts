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

type Json = Record<string, any>;

const MEDIA_TYPES = ['image', 'video', 'audio', 'document', 'sticker'];

/**
 * Reads one inbound message of a Meta webhook in its documented shapes (fixtures/meta): text,
 * media with caption, interactive button/list replies, template quick-reply buttons, reactions,
 * locations and contacts. Unknown types keep their type with no text.
 */
export function parseWhatsAppMessage(m: Json): ParsedWhatsAppMessage {
  const type = String(m.type ?? 'unknown');
  const seconds = Number(m.timestamp);
  const base = {
    wamid: String(m.id),
    from: String(m.from),
    sentAt: Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : new Date(),
    type,
    inReplyTo: typeof m.context?.id === 'string' ? m.context.id : null,
    attachments: [] as NewAttachment[],
    typedText: false,
  };
  if (type === 'text') return { ...base, text: m.text?.body ?? null, typedText: true };
  if (MEDIA_TYPES.includes(type)) {
    const media = m[type] ?? {};
    return {
      ...base,
      text: media.caption ?? null,
      attachments: [{ media_type: type, mime_type: media.mime_type ?? null, provider_media_id: media.id ?? null, sha256: media.sha256 ?? null, url: media.url ?? null, caption: media.caption ?? null, filename: media.filename ?? null }],
    };
  }
  if (type === 'interactive') {
    const reply = m.interactive?.button_reply ?? m.interactive?.list_reply;
    return { ...base, text: reply?.title ?? null, typedText: true };
  }
  if (type === 'button') return { ...base, text: m.button?.text ?? null, typedText: true };
  if (type === 'reaction') return { ...base, text: m.reaction?.emoji ?? null, inReplyTo: m.reaction?.message_id ?? base.inReplyTo };
  if (type === 'location') {
    const l = m.location ?? {};
    return { ...base, text: [l.name, l.address, l.latitude !== undefined ? `${l.latitude},${l.longitude}` : null].filter(Boolean).join(' · ') || null };
  }
  return { ...base, text: null };
}
