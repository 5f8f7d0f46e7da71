import { useCallback, useEffect, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { LoadState } from '../load-state';
import type { PageProps } from '../routes';
import { Link } from '../router';
import { formatTime } from '../text';

/**
 * One follow-up enrollment (`GET /ai/followups/enrollments/{id}`, seed 002 "Inscrições"): where it
 * stands, its events (newest first, as the API orders them) and its effects: sends,
 * classifications and schedule plans, with their status, text or template, and model usage.
 */
export function FollowupEnrollmentPage({ params, session }: PageProps) {
  const enrollmentId = params.enrollment_id!;
  const [detail, setDetail] = useState<Schemas['EnrollmentDetailDto'] | null>(null);
  const [flowName, setFlowName] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  const load = useCallback(async () => {
    const customer_id = session.organization_id;
    const got = await api.GET('/ai/followups/enrollments/{id}', { params: { path: { id: enrollmentId }, query: { customer_id } } });
    if (!got.data) {
      setError(errorOf(got.response, got.error));
      return;
    }
    setDetail(got.data.data);
    const flow = await api.GET('/ai/followup-flows/{id}', { params: { path: { id: got.data.data.enrollment.flow_id }, query: { customer_id } } });
    if (flow.data) setFlowName(flow.data.data.name);
  }, [enrollmentId, session.organization_id]);
  useEffect(() => {
    void load();
  }, [load]);

  const enrollment = detail?.enrollment;
  return (
    <section aria-labelledby="enrollment-title">
      <p className="crumbs">
        <Link to="/followups/queue">Queue</Link> ›
      </p>
      <h1 id="enrollment-title">Enrollment of contact {enrollment ? <code>{enrollment.contact_id.slice(0, 8)}</code> : '…'}</h1>
      <LoadState loading={detail === null} error={error} />
      {enrollment ? (
        <dl className="facts">
          <dt>Flow</dt>
          <dd>
            <Link to={`/followups/flows/${enrollment.flow_id}`}>{flowName ?? enrollment.flow_id.slice(0, 8)}</Link>
          </dd>
          <dt>Status</dt>
          <dd>
            <span className={`status status-${enrollment.status}`}>{enrollment.status}</span>
            {enrollment.reason ? ` (${enrollment.reason})` : ''}
          </dd>
          <dt>At node</dt>
          <dd>{enrollment.node_id ?? '—'}</dd>
          <dt>Next run</dt>
          <dd>{formatTime(enrollment.next_run_at)}</dd>
          <dt>Enrolled</dt>
          <dd>{formatTime(enrollment.created_at)}</dd>
          <dt>Operation key</dt>
          <dd>
            <code>{enrollment.operation_key}</code>
          </dd>
          {enrollment.last_error ? (
            <>
              <dt>Last error</dt>
              <dd>{enrollment.last_error}</dd>
            </>
          ) : null}
        </dl>
      ) : null}
      {detail ? (
        <>
          <h2>Effects</h2>
          {detail.effects.length === 0 ? <p className="empty">No step has had an effect yet.</p> : null}
          {detail.effects.length > 0 ? (
            <table aria-label="Effects">
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col">Text or template</th>
                  <th scope="col">Delivery</th>
                  <th scope="col">Usage</th>
                  <th scope="col">At</th>
                </tr>
              </thead>
              <tbody>
                {detail.effects.map((effect) => (
                  <tr key={effect.id} data-effect-id={effect.id}>
                    <td>{effect.node_id}</td>
                    <td>{effect.kind}</td>
                    <td>
                      {effect.status}
                      {effect.reason ? ` (${effect.reason})` : ''}
                      {effect.status === 'awaiting_decision' ? (
                        <>
                          {' '}
                          <Link to="/followups/approvals">decide</Link>
                        </>
                      ) : null}
                    </td>
                    <td>{effect.text ?? (effect.template ? `template ${effect.template.name} (${effect.template.language})` : '—')}</td>
                    <td>{effect.delivery_status ?? '—'}</td>
                    <td>{effect.usage ? <code>{JSON.stringify(effect.usage)}</code> : '—'}</td>
                    <td>{formatTime(effect.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          <h2>Events</h2>
          {detail.events.length === 0 ? <p className="empty">No event yet.</p> : null}
          {detail.events.length > 0 ? (
            <table aria-label="Events">
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Node</th>
                  <th scope="col">Details</th>
                  <th scope="col">At</th>
                </tr>
              </thead>
              <tbody>
                {detail.events.map((event) => (
                  <tr key={event.id}>
                    <td>{event.type}</td>
                    <td>{event.node_id ?? '—'}</td>
                    <td>{Object.keys(event.data).length ? <code>{JSON.stringify(event.data)}</code> : '—'}</td>
                    <td>{formatTime(event.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
