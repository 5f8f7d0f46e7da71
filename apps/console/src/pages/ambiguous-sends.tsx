import { useCallback, useEffect, useId, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { formatTime } from '../text';
import { ErrorMessage, LoadState } from '../load-state';

/**
 * Sends whose outcome is unknown (DESIGN §5 rule 1: never retried blindly): each with its evidence
 * (the last error and classification, the provider id if one came back) and a form to settle it as
 * reached the contact (accepted) or not (rejected), with a note kept on the entry.
 */
export function AmbiguousSendsPage() {
  const [entries, setEntries] = useState<Schemas['AmbiguousSendDto'][] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const load = useCallback(async () => {
    const listed = await api.GET('/outbox/ambiguous');
    if (listed.data) setEntries(listed.data.items);
    else setError(errorOf(listed.response, listed.error));
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section aria-labelledby="ambiguous-title">
      <h1 id="ambiguous-title">Ambiguous sends</h1>
      <p className="lead">The provider never said whether these reached the contact. They are not sent again; a person decides.</p>
      <div aria-live="polite" className="notice">
        {notice}
      </div>
      <LoadState loading={entries === null} error={error} />
      {entries && entries.length === 0 ? <p className="empty">No send is waiting for a decision.</p> : null}
      <div className="cards">
        {entries?.map((entry) => (
          <AmbiguousEntry
            key={entry.id}
            entry={entry}
            onResolved={(message) => {
              setNotice(message);
              void load();
            }}
          />
        ))}
      </div>
    </section>
  );
}

function AmbiguousEntry({ entry, onResolved }: { entry: Schemas['AmbiguousSendDto']; onResolved: (message: string) => void }) {
  const id = useId();
  const [status, setStatus] = useState<'accepted' | 'rejected'>('accepted');
  const [note, setNote] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const resolve = async () => {
    setBusy(true);
    setError(null);
    const answer = await api.POST('/outbox/ambiguous/{entry_id}/resolve', { params: { path: { entry_id: entry.id } }, body: { status, note: note.trim() } });
    setBusy(false);
    if (answer.data) onResolved(`The ${entry.channel} send to ${entry.to} is settled as ${answer.data.status}.`);
    else setError(errorOf(answer.response, answer.error));
  };

  return (
    <article className="card" aria-labelledby={`${id}-title`} data-entry-id={entry.id}>
      <h2 id={`${id}-title`}>
        {entry.channel} to {entry.to}
      </h2>
      <dl className="facts">
        <dt>Queued</dt>
        <dd>{formatTime(entry.created_at)}</dd>
        <dt>Attempts</dt>
        <dd>
          {entry.attempts} of {entry.max_attempts}
        </dd>
        <dt>Last error</dt>
        <dd>{[entry.last_classification, entry.last_error_code, entry.last_error_message].filter(Boolean).join(' · ') || '—'}</dd>
        <dt>Provider id</dt>
        <dd>{entry.provider_message_id ?? 'none came back'}</dd>
        <dt>Key</dt>
        <dd>
          <code>{entry.idempotency_key}</code>
        </dd>
      </dl>
      <form
        className="regenerate"
        onSubmit={(e) => {
          e.preventDefault();
          void resolve();
        }}
      >
        <fieldset>
          <legend>Did it reach the contact?</legend>
          <label>
            <input type="radio" name={`${id}-status`} checked={status === 'accepted'} onChange={() => setStatus('accepted')} /> Yes, it arrived (mark sent)
          </label>
          <label>
            <input type="radio" name={`${id}-status`} checked={status === 'rejected'} onChange={() => setStatus('rejected')} /> No, it did not (mark failed)
          </label>
        </fieldset>
        <label htmlFor={`${id}-note`}>Note (how you know)</label>
        <textarea id={`${id}-note`} rows={2} required value={note} onChange={(e) => setNote(e.target.value)} />
        {error ? <ErrorMessage error={error} /> : null}
        <button type="submit" className="primary" disabled={busy || note.trim() === ''}>
          Resolve
        </button>
      </form>
    </article>
  );
}
