/**
 * The reviewer's unsent edits (seed 003 §4.5): kept in localStorage under the action id, so a
 * reload or a closed tab loses nothing; cleared on approve, on reject and on a 409
 * `action_not_pending` (the action left the queue). Other 409s (`campaign_not_active`,
 * `outreach_stopped`) leave the draft pending, so its edit stays for when it can be approved;
 * `pruneEdits` drops it once the action is gone from the queue. The action id fixes the draft the
 * edit was made on: a new draft has a new id.
 */
const PREFIX = 'touchpoint.console.edit.';

/**
 * Whether a failed approve or reject says the action left the queue, so its edit goes: only 409
 * `action_not_pending`. Other 409s (`campaign_not_active`, `outreach_stopped`,
 * `enrollment_not_active`) and every other failure leave the draft pending and keep the edit.
 */
export function leftQueue(status: number, code: string): boolean {
  return status === 409 && code === 'action_not_pending';
}

/** The fields a reviewer can edit, as `POST .../approve` takes them in `payload`. */
export interface DraftText {
  subject?: string;
  body?: string;
  note?: string;
}

export function loadEdit(actionId: string): DraftText | null {
  try {
    const raw = window.localStorage.getItem(PREFIX + actionId);
    return raw ? (JSON.parse(raw) as DraftText) : null;
  } catch {
    return null;
  }
}

export function saveEdit(actionId: string, edit: DraftText): void {
  window.localStorage.setItem(PREFIX + actionId, JSON.stringify(edit));
}

export function clearEdit(actionId: string): void {
  window.localStorage.removeItem(PREFIX + actionId);
}

/** Drops the edits of actions that are no longer in the queue (called with the whole queue). */
export function pruneEdits(pendingIds: Set<string>): void {
  for (let i = window.localStorage.length - 1; i >= 0; i--) {
    const key = window.localStorage.key(i);
    if (key?.startsWith(PREFIX) && !pendingIds.has(key.slice(PREFIX.length))) window.localStorage.removeItem(key);
  }
}

/** The fields of `draft` the reviewer works on, per action type. */
export function editableFields(type: string, draft: DraftText): Array<keyof DraftText> {
  if (type === 'linkedin_connection') return ['note'];
  if (type === 'linkedin_message') return ['body'];
  // An email reply has no subject (seed 003 §4.4): the draft says so by leaving it out.
  return draft.subject === undefined ? ['body'] : ['subject', 'body'];
}

/** Whether `edit` changes any editable field of `draft`. */
export function isEdited(type: string, draft: DraftText, edit: DraftText | null): boolean {
  if (!edit) return false;
  return editableFields(type, draft).some((field) => edit[field] !== undefined && edit[field] !== (draft[field] ?? ''));
}
