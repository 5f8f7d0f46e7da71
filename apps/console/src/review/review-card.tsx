import { useId, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { ErrorMessage } from '../load-state';
import { cutText, formatAge } from '../text';
import { clearEdit, type DraftText, editableFields, isEdited, leftQueue, loadEdit, saveEdit } from './edits';

/** Longest "Replying to" text on a card, characters (seed 003 §4.5). */
export const REPLYING_TO_MAX = 500;

const TYPE_LABELS: Record<string, string> = { email: 'Email', linkedin_connection: 'LinkedIn connection', linkedin_message: 'LinkedIn message' };
const FIELD_LABELS: Record<keyof DraftText, string> = { subject: 'Subject', body: 'Body', note: 'Connection note' };

export type CardOutcome = { kind: 'approved' | 'rejected' | 'gone'; message: string };

/**
 * One pending draft of the review queue (seed 003 §4.5): who, which campaign and its status, the
 * type and age, the recipient read fresh, the message it answers, why the agent wrote it, and the
 * draft to edit. Approve sends the edit (if any) with the approval; Reject asks for a new draft
 * with a reason, or stops the enrollment. `onStale` asks for the queue again (a 409 that leaves
 * the draft pending: the campaign or outreach was stopped meanwhile).
 */
export function ReviewCard({ card, outreachStopped, onDone, onStale, onOpenHistory }: { card: Schemas['ReviewCardDto']; outreachStopped: boolean; onDone: (id: string, outcome: CardOutcome) => void; onStale: () => void; onOpenHistory: (enrollmentId: string) => void }) {
  const draft = card.draft as DraftText;
  const fields = editableFields(card.type, draft);
  const [edit, setEdit] = useState<DraftText | null>(() => loadEdit(card.id));
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [rejectOpen, setRejectOpen] = useState(false);
  const [regenerating, setRegenerating] = useState(false);
  const [reason, setReason] = useState('');
  const id = useId();
  const edited = isEdited(card.type, draft, edit);
  const campaignActive = card.campaign.status === 'active';
  const approveBlocked = !campaignActive ? `The campaign is ${card.campaign.status}: resume it to approve.` : outreachStopped ? 'Outreach is stopped for the organization: resume it to approve.' : null;
  const personName = card.person.name ?? 'Unnamed person';

  const valueOf = (field: keyof DraftText) => edit?.[field] ?? draft[field] ?? '';
  const change = (field: keyof DraftText, value: string) => {
    const next = { ...(edit ?? {}), [field]: value };
    setEdit(next);
    saveEdit(card.id, next);
    setError(null);
  };
  const reset = () => {
    clearEdit(card.id);
    setEdit(null);
    setError(null);
  };
  /**
   * A 409 `action_not_pending` means the action left the queue (approved elsewhere, replaced after
   * a reply, ...): its edit goes with it. Any other 409 (`campaign_not_active`, `outreach_stopped`,
   * `enrollment_not_active`) leaves the draft pending: the edit stays, and the queue is read again
   * so the card shows the campaign's status and outreach's stop as they are now.
   */
  const settle = (response: Response, body: unknown, done: CardOutcome) => {
    if (response.ok) {
      clearEdit(card.id);
      onDone(card.id, done);
      return;
    }
    const failure = errorOf(response, body);
    if (leftQueue(response.status, failure.code)) {
      clearEdit(card.id);
      onDone(card.id, { kind: 'gone', message: `${personName}: this draft is no longer waiting for review (${failure.code}).` });
      return;
    }
    setError(failure);
    if (response.status === 409) onStale();
  };

  const approve = async () => {
    setBusy(true);
    setError(null);
    const payload = edited ? Object.fromEntries(fields.map((field) => [field, valueOf(field)])) : undefined;
    const { response, error: body } = await api.POST('/agentic/outreach/actions/{action_id}/approve', { params: { path: { action_id: card.id } }, body: payload ? { payload } : {} });
    setBusy(false);
    settle(response, body, { kind: 'approved', message: `Approved the ${TYPE_LABELS[card.type]?.toLowerCase() ?? card.type} to ${personName}${edited ? ' (edited)' : ''}.` });
  };

  const reject = async (then: 'regenerate' | 'stop') => {
    setBusy(true);
    setError(null);
    const { response, error: body } = await api.POST('/agentic/outreach/actions/{action_id}/reject', { params: { path: { action_id: card.id } }, body: then === 'regenerate' ? { then, reason: reason.trim() } : { then } });
    setBusy(false);
    settle(response, body, { kind: 'rejected', message: then === 'regenerate' ? `Asked for a new draft for ${personName}.` : `Stopped outreach to ${personName} in this campaign.` });
  };

  return (
    <article className="card" aria-labelledby={`${id}-title`} data-action-id={card.id}>
      <header className="card-head">
        <h2 id={`${id}-title`}>
          {personName}
          {card.person.company ? <span className="company"> · {card.person.company}</span> : null}
        </h2>
        <p className="meta">
          <span>
            Campaign <strong>{card.campaign.name}</strong> <span className={`status status-${card.campaign.status}`}>{card.campaign.status}</span>
          </span>
          <span>{TYPE_LABELS[card.type] ?? card.type}</span>
          <span title={card.created_at}>waiting {formatAge(card.age_seconds)}</span>
          <button type="button" className="link-button" onClick={() => onOpenHistory(card.enrollment_id)}>
            History
          </button>
        </p>
      </header>
      <dl className="facts">
        <dt>To</dt>
        <dd data-testid="card-to">{card.to ?? <em>no {card.type === 'email' ? 'email address' : 'LinkedIn profile'} on file now</em>}</dd>
        {card.replying_to ? (
          <>
            <dt>Replying to</dt>
            <dd>
              <blockquote data-testid="card-replying-to">{cutText(card.replying_to, REPLYING_TO_MAX)}</blockquote>
            </dd>
          </>
        ) : null}
        <dt>Why</dt>
        <dd>
          {card.rationale ?? <em>no rationale recorded</em>}
          {card.objective ? (
            <>
              <br />
              <span className="objective">Objective: {card.objective}</span>
            </>
          ) : null}
        </dd>
      </dl>
      <fieldset className="draft">
        <legend>
          Draft{' '}
          {edited ? (
            <span className="edited" data-testid="edited-mark">
              Edited
            </span>
          ) : null}
        </legend>
        {fields.map((field) =>
          field === 'subject' ? (
            <div key={field} className="field">
              <label htmlFor={`${id}-${field}`}>{FIELD_LABELS[field]}</label>
              <input id={`${id}-${field}`} value={valueOf(field)} onChange={(e) => change(field, e.target.value)} />
            </div>
          ) : (
            <div key={field} className="field">
              <label htmlFor={`${id}-${field}`}>{FIELD_LABELS[field]}</label>
              <textarea id={`${id}-${field}`} rows={field === 'note' ? 3 : 7} value={valueOf(field)} onChange={(e) => change(field, e.target.value)} />
            </div>
          ),
        )}
        {edited ? (
          <button type="button" className="link-button" onClick={reset}>
            Reset to draft
          </button>
        ) : null}
      </fieldset>
      {error ? <ErrorMessage error={error} testId="card-error" /> : null}
      <div className="actions">
        <button type="button" className="primary" disabled={busy || approveBlocked !== null} aria-describedby={approveBlocked ? `${id}-blocked` : undefined} onClick={approve}>
          Approve
        </button>
        <div className="menu">
          <button type="button" aria-haspopup="true" aria-expanded={rejectOpen} aria-controls={`${id}-reject`} disabled={busy} onClick={() => setRejectOpen(!rejectOpen)}>
            Reject ▾
          </button>
          {rejectOpen ? (
            <div id={`${id}-reject`} className="menu-items" role="group" aria-label="Reject">
              <button type="button" onClick={() => setRegenerating(true)}>
                Regenerate…
              </button>
              <button type="button" onClick={() => reject('stop')}>
                Stop
              </button>
            </div>
          ) : null}
        </div>
        {approveBlocked ? (
          <p id={`${id}-blocked`} className="blocked">
            {approveBlocked}
          </p>
        ) : null}
      </div>
      {rejectOpen && regenerating ? (
        <form
          className="regenerate"
          onSubmit={(e) => {
            e.preventDefault();
            void reject('regenerate');
          }}
        >
          <label htmlFor={`${id}-reason`}>What should the new draft do differently?</label>
          <textarea id={`${id}-reason`} rows={3} required value={reason} onChange={(e) => setReason(e.target.value)} />
          <button type="submit" disabled={busy || reason.trim() === ''}>
            Ask for a new draft
          </button>
        </form>
      ) : null}
    </article>
  );
}
