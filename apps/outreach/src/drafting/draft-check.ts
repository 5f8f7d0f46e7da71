import { DRAFT_EMAIL_BODY_MAX, DRAFT_EMAIL_SUBJECT_MAX, DRAFT_LINKEDIN_MESSAGE_MAX, DRAFT_LINKEDIN_NOTE_MAX, type DraftCheckCode, type DraftPayload, type OutboundActionType } from '@touchpoint/contracts';
import { codePointLength } from '@touchpoint/text';

/*
 * The draft limits, code points, from libs/contracts (channel-text-limits.ts), where each sits at
 * or below the channel's send limit that messaging and the dispatcher check: an approved draft fits.
 */
/** Longest LinkedIn connection note (seed 003 §4.4). */
export const LINKEDIN_NOTE_MAX = DRAFT_LINKEDIN_NOTE_MAX;
/** Longest LinkedIn message (seed 003 §4.4). */
export const LINKEDIN_MESSAGE_MAX = DRAFT_LINKEDIN_MESSAGE_MAX;
/** Longest email subject and body (ours: the seed leaves email lengths to the check). */
export const EMAIL_SUBJECT_MAX = DRAFT_EMAIL_SUBJECT_MAX;
export const EMAIL_BODY_MAX = DRAFT_EMAIL_BODY_MAX;

/** Any text in square or curly brackets, such as `[First name]` or `{{company}}` (seed 003 §4.4). */
const PLACEHOLDER = /\[[^\]\n]*\]|\{[^}\n]*\}/;
/** A link: a scheme, `www.`, or a bare domain with a common top-level domain. */
const LINK = /(?:https?:\/\/|www\.)\S+|\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|co|ai|app|dev|info|biz|me|ly|so|xyz|tech|link|page|site|br|uk|de|fr|es|pt|us|ca|eu|nl|in)\b/i;

/** The fields each draft has, and their limits; fields a type does not use are dropped. */
const FIELDS: Record<OutboundActionType | 'email_reply', { field: keyof DraftPayload; max: number }[]> = {
  email: [
    { field: 'subject', max: EMAIL_SUBJECT_MAX },
    { field: 'body', max: EMAIL_BODY_MAX },
  ],
  // A reply answers the newest message in its thread and has no subject of its own.
  email_reply: [{ field: 'body', max: EMAIL_BODY_MAX }],
  linkedin_connection: [{ field: 'note', max: LINKEDIN_NOTE_MAX }],
  linkedin_message: [{ field: 'body', max: LINKEDIN_MESSAGE_MAX }],
};

/**
 * A reviewer's edit over the draft as written (seed 003 §4.5): `subject`, `body` and `note` are
 * independent optional edits, so a field the edit leaves out (or gives as `undefined`) keeps the
 * draft's text; one it gives, `""` included, replaces it. No edit → the draft itself. The result
 * still goes through `checkDraft`: an edit that empties a required field is `draft_empty`.
 */
export function mergeDraftEdit(draft: unknown, edit: DraftPayload | undefined): unknown {
  if (edit === undefined || edit === null) return draft;
  const merged: Record<string, unknown> = { ...(draft && typeof draft === 'object' ? draft : {}) };
  for (const field of ['subject', 'body', 'note'] as const) if (edit[field] !== undefined) merged[field] = edit[field];
  return merged;
}

export type DraftCheckResult = { ok: true; draft: DraftPayload } | { ok: false; code: DraftCheckCode; field: keyof DraftPayload; message: string };

/**
 * The draft check (seed 003 §4.4), one pure function shared by the writers and by approve with an
 * edit, so a model and a person meet the same rule. Basic checks only, in this order: a required
 * field empty (`draft_empty`), too long (`draft_too_long`), a placeholder (`draft_placeholder`),
 * a link in a connection note (`draft_link_in_note`). Text is trimmed at both ends.
 * @param isReply an email that answers a message in its thread (its subject is dropped)
 */
export function checkDraft(type: OutboundActionType, isReply: boolean, input: unknown): DraftCheckResult {
  const given = (input && typeof input === 'object' ? input : {}) as Record<string, unknown>;
  const fields = FIELDS[type === 'email' && isReply ? 'email_reply' : type];
  const draft: DraftPayload = {};
  for (const { field } of fields) draft[field] = typeof given[field] === 'string' ? (given[field] as string).trim() : '';
  for (const { field } of fields) {
    if (!draft[field]) return { ok: false, code: 'draft_empty', field, message: `${field} is empty` };
  }
  for (const { field, max } of fields) {
    if (codePointLength(draft[field]!) > max) return { ok: false, code: 'draft_too_long', field, message: `${field} is longer than ${max} characters` };
  }
  for (const { field } of fields) {
    if (PLACEHOLDER.test(draft[field]!)) return { ok: false, code: 'draft_placeholder', field, message: `${field} holds a placeholder in [ ] or { }` };
  }
  if (type === 'linkedin_connection' && LINK.test(draft.note!)) return { ok: false, code: 'draft_link_in_note', field: 'note', message: 'a connection note cannot hold a link' };
  return { ok: true, draft };
}
