import { type FormEvent, useCallback, useEffect, useId, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { ErrorMessage, LoadState } from '../load-state';
import { formatTime } from '../text';

type Channel = Schemas['AddSuppressionDto']['channel'];

const CHANNELS: Array<{ value: Channel; label: string }> = [
  { value: 'email', label: 'Email' },
  { value: 'whatsapp', label: 'WhatsApp' },
  { value: 'linkedin', label: 'LinkedIn' },
];
const CHANNEL_LABELS = Object.fromEntries(CHANNELS.map((c) => [c.value, c.label])) as Record<string, string>;
/** Rows per page of the list (the route's default; ours). */
const PAGE_SIZE = 50;

/**
 * The organization's do-not-contact list (seed 003 §5 `contact_suppressions`): every
 * sender refuses these addresses right before the wire. Search it (part of the address or of the
 * note), add an address by hand with a note, and remove one with a note saying why it may be
 * contacted again; the gateway keeps the removal with that note. Admin only, as the API says.
 */
export function DoNotContactPage() {
  const [rows, setRows] = useState<Schemas['SuppressionDto'][] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const load = useCallback(async (q: string, after?: string) => {
    const answer = await api.GET('/suppressions', { params: { query: { limit: PAGE_SIZE, ...(q ? { q } : {}), ...(after ? { cursor: after } : {}) } } });
    if (!answer.data) {
      setError(errorOf(answer.response, answer.error));
      return;
    }
    const page = answer.data;
    setError(null);
    setRows((previous) => (after ? [...(previous ?? []), ...page.items] : page.items));
    setCursor(page.next_cursor ?? null);
  }, []);
  useEffect(() => {
    void load(applied);
  }, [load, applied]);

  const onSearch = (event: FormEvent) => {
    event.preventDefault();
    setRows(null);
    setApplied(search.trim());
  };
  const changed = (message: string) => {
    setNotice(message);
    void load(applied);
  };

  return (
    <section aria-labelledby="dnc-title">
      <h1 id="dnc-title">Do not contact</h1>
      <p className="lead">No message goes to these addresses on their channel, whoever sends it: opt-outs, unsubscribes and bounces land here, and so do the addresses you add.</p>
      <div aria-live="polite" className="notice">
        {notice}
      </div>
      <AddForm onAdded={changed} />
      <h2>The list</h2>
      <form role="search" className="search" onSubmit={onSearch}>
        <label htmlFor="dnc-search">Search addresses and notes</label>
        <input id="dnc-search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        <button type="submit">Search</button>
      </form>
      <LoadState loading={rows === null} error={error} />
      {rows && rows.length === 0 ? <p className="empty">{applied ? `Nothing on the list matches "${applied}".` : 'The list is empty.'}</p> : null}
      {rows && rows.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">Channel</th>
              <th scope="col">Why</th>
              <th scope="col">Since</th>
              <th scope="col">Remove</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <SuppressionRow key={row.id} row={row} onRemoved={changed} />
            ))}
          </tbody>
        </table>
      ) : null}
      {cursor ? (
        <button type="button" onClick={() => void load(applied, cursor)}>
          Show more
        </button>
      ) : null}
    </section>
  );
}

function AddForm({ onAdded }: { onAdded: (message: string) => void }) {
  const id = useId();
  const [channel, setChannel] = useState<Channel>('email');
  const [value, setValue] = useState('');
  const [note, setNote] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const add = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const answer = await api.POST('/suppressions', { body: { channel, value: value.trim(), ...(note.trim() ? { note: note.trim() } : {}) } });
    setBusy(false);
    if (!answer.data) {
      setError(errorOf(answer.response, answer.error));
      return;
    }
    const { created, cancelled_entry_ids: cancelled } = answer.data;
    setValue('');
    setNote('');
    onAdded(created ? `${answer.data.value} is on the list${cancelled.length ? `; ${cancelled.length} queued send(s) to it cancelled` : ''}.` : `${answer.data.value} was on the list already.`);
  };

  return (
    <form className="regenerate" aria-labelledby={`${id}-title`} onSubmit={(e) => void add(e)}>
      <h2 id={`${id}-title`}>Add an address</h2>
      <label htmlFor={`${id}-channel`}>Channel</label>
      <select id={`${id}-channel`} value={channel} onChange={(e) => setChannel(e.target.value as Channel)}>
        {CHANNELS.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
      <label htmlFor={`${id}-value`}>Address (email, phone number or LinkedIn id)</label>
      <input id={`${id}-value`} required value={value} onChange={(e) => setValue(e.target.value)} />
      <label htmlFor={`${id}-note`}>Note (optional: why)</label>
      <textarea id={`${id}-note`} rows={2} value={note} onChange={(e) => setNote(e.target.value)} />
      {error ? <ErrorMessage error={error} /> : null}
      <button type="submit" className="primary" disabled={busy || value.trim() === ''}>
        Add to the list
      </button>
    </form>
  );
}

function SuppressionRow({ row, onRemoved }: { row: Schemas['SuppressionDto']; onRemoved: (message: string) => void }) {
  const id = useId();
  const [open, setOpen] = useState(false);
  const [note, setNote] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const remove = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const answer = await api.DELETE('/suppressions', { body: { channel: row.channel as Channel, value: row.value, note: note.trim() } });
    setBusy(false);
    if (!answer.data) setError(errorOf(answer.response, answer.error));
    else onRemoved(answer.data.removed ? `${row.value} may be contacted again on ${CHANNEL_LABELS[row.channel] ?? row.channel}.` : `${row.value} was no longer on the list.`);
  };

  return (
    <>
      <tr data-suppression-id={row.id}>
        <td>
          <code>{row.value}</code>
        </td>
        <td>{CHANNEL_LABELS[row.channel] ?? row.channel}</td>
        <td>
          {row.reason ?? '—'}
          {row.note ? <span className="help"> · {row.note}</span> : null}
        </td>
        <td>{formatTime(row.created_at)}</td>
        <td>
          <button type="button" aria-expanded={open} aria-controls={`${id}-remove`} aria-label={`Remove ${row.value}`} onClick={() => setOpen(!open)}>
            Remove…
          </button>
        </td>
      </tr>
      {open ? (
        <tr id={`${id}-remove`}>
          <td colSpan={5}>
            <form className="regenerate" onSubmit={(e) => void remove(e)}>
              <label htmlFor={`${id}-note`}>Why may {row.value} be contacted again?</label>
              <textarea id={`${id}-note`} rows={2} required value={note} onChange={(e) => setNote(e.target.value)} />
              {error ? <ErrorMessage error={error} /> : null}
              <button type="submit" className="danger" disabled={busy || note.trim() === ''}>
                Remove from the list
              </button>
            </form>
          </td>
        </tr>
      ) : null}
    </>
  );
}
