import { useCallback, useEffect, useId, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { ErrorMessage, LoadState } from '../load-state';
import type { PageProps } from '../routes';
import { Link } from '../router';
import { formatTime } from '../text';

type Waiting = Schemas['EffectListItemDto'];

/**
 * The follow-up sends waiting for a person's decision (`GET /ai/followups/effects?status=
 * awaiting_decision`), oldest first, each with approve and reject (`POST
 * /ai/followups/effects/{id}/decision`). The API decides who may decide (a key created by an
 * admin); when it refuses, the card shows its answer and the send keeps waiting.
 */
export function FollowupApprovalsPage({ session }: PageProps) {
  const [items, setItems] = useState<Waiting[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const load = useCallback(
    async (after?: string) => {
      const answer = await api.GET('/ai/followups/effects', { params: { query: { customer_id: session.organization_id, status: 'awaiting_decision', limit: 50, ...(after ? { cursor: after } : {}) } } });
      if (!answer.data) {
        setError(errorOf(answer.response, answer.error));
        return;
      }
      const page = answer.data.data;
      setItems((previous) => (after ? [...(previous ?? []), ...page.data] : page.data));
      setCursor(page.next_cursor);
    },
    [session.organization_id],
  );
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Sends awaiting a decision</h1>
      <p className="lead">These flows ask a person before each send. Approving sends it; rejecting skips the step. Deciding needs a key created by an admin.</p>
      <div aria-live="polite" className="notice">
        {notice}
      </div>
      <LoadState loading={items === null} error={error} />
      {items && items.length === 0 ? <p className="empty">No send is waiting for a decision.</p> : null}
      <div className="cards">
        {items?.map((item) => (
          <WaitingSend
            key={item.id}
            item={item}
            customerId={session.organization_id}
            onDecided={(message) => {
              setNotice(message);
              void load();
            }}
          />
        ))}
      </div>
      {cursor ? (
        <button type="button" onClick={() => void load(cursor)}>
          More
        </button>
      ) : null}
    </section>
  );
}

function WaitingSend({ item, customerId, onDecided }: { item: Waiting; customerId: string; onDecided: (message: string) => void }) {
  const id = useId();
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const who = item.contact_name ?? item.contact_phone ?? item.contact_id.slice(0, 8);

  const decide = async (approve: boolean) => {
    setBusy(true);
    setError(null);
    const answer = await api.POST('/ai/followups/effects/{id}/decision', { params: { path: { id: item.id } }, body: { customer_id: customerId, approve } });
    setBusy(false);
    if (answer.data) onDecided(`The send to ${who} is ${answer.data.data.status}.`);
    else setError(errorOf(answer.response, answer.error));
  };

  return (
    <article className="card" aria-labelledby={`${id}-title`} data-effect-id={item.id}>
      <h2 id={`${id}-title`}>
        {item.flow_name} to {who}
      </h2>
      <dl className="facts">
        <dt>Message</dt>
        <dd>{item.text ?? (item.template ? `template ${item.template.name} (${item.template.language})` : '—')}</dd>
        <dt>Node</dt>
        <dd>
          <code>{item.node_id}</code>
        </dd>
        <dt>Waiting since</dt>
        <dd>{formatTime(item.created_at)}</dd>
        <dt>Enrollment</dt>
        <dd>
          <Link to={`/followups/enrollments/${item.enrollment_id}`}>Open the enrollment</Link>
        </dd>
      </dl>
      {error ? <ErrorMessage error={error} /> : null}
      <div className="actions">
        <button type="button" className="primary" disabled={busy} onClick={() => void decide(true)} aria-label={`Approve the send to ${who}`}>
          Approve
        </button>
        <button type="button" className="danger" disabled={busy} onClick={() => void decide(false)} aria-label={`Reject the send to ${who}`}>
          Reject
        </button>
      </div>
    </article>
  );
}
