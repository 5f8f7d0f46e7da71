import { useCallback, useEffect, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import type { PageProps } from '../routes';
import { Link } from '../router';
import { formatTime } from '../text';
import { LoadState } from '../load-state';

/**
 * The unified follow-up queue (`GET /ai/followups/queue`, seed 002): every enrollment and one-off
 * return with its next time and the reason it waits, soonest first as the service orders them.
 */
export function FollowupsQueuePage({ session }: PageProps) {
  const [items, setItems] = useState<Schemas['QueueItemDto'][] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  const load = useCallback(
    async (after?: string) => {
      const answer = await api.GET('/ai/followups/queue', { params: { query: { customer_id: session.organization_id, limit: 100, ...(after ? { cursor: after } : {}) } } });
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
    <section aria-labelledby="queue-title">
      <h1 id="queue-title">Follow-up queue</h1>
      <LoadState loading={items === null} error={error} />
      {items && items.length === 0 ? <p className="empty">Nothing is scheduled.</p> : null}
      {items && items.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Contact</th>
              <th scope="col">Kind</th>
              <th scope="col">Flow</th>
              <th scope="col">Status</th>
              <th scope="col">Next time</th>
              <th scope="col">Why it waits</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={`${item.kind}:${item.id}`}>
                <td>{item.kind === 'enrollment' ? <Link to={`/followups/enrollments/${item.id}`}>{item.contact_name ?? item.contact_phone ?? item.contact_id.slice(0, 8)}</Link> : (item.contact_name ?? item.contact_phone ?? item.contact_id.slice(0, 8))}</td>
                <td>{item.kind}</td>
                <td>{item.flow_id ? <Link to={`/followups/flows/${item.flow_id}`}>{item.flow_name ?? item.flow_id.slice(0, 8)}</Link> : '—'}</td>
                <td>{item.status}</td>
                <td>{formatTime(item.next_fire_at)}</td>
                <td>
                  {item.reason ?? '—'}
                  {item.last_error ? <span className="error"> ({item.last_error})</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {cursor ? (
        <button type="button" onClick={() => void load(cursor)}>
          More
        </button>
      ) : null}
    </section>
  );
}
