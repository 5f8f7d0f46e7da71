import { useCallback, useEffect, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { EnrollmentDrawer } from '../enrollments/enrollment-drawer';
import type { PageProps } from '../routes';
import { Link, navigate, withQuery } from '../router';
import { formatTime } from '../text';
import { LoadState } from '../load-state';

/** One campaign and its enrollments; each opens the enrollment drawer (`?enrollment=<id>`). */
export function CampaignPage({ params, location }: PageProps) {
  const campaignId = params.campaign_id!;
  const [campaign, setCampaign] = useState<Schemas['CampaignDto'] | null>(null);
  const [enrollments, setEnrollments] = useState<Schemas['OutreachEnrollmentDto'][] | null>(null);
  const [names, setNames] = useState<Record<string, string>>({});
  const [error, setError] = useState<ApiError | null>(null);

  const load = useCallback(async () => {
    const path = { campaign_id: campaignId };
    const [got, listed] = await Promise.all([api.GET('/agentic/outreach/campaigns/{campaign_id}', { params: { path } }), api.GET('/agentic/outreach/campaigns/{campaign_id}/enrollments', { params: { path } })]);
    if (got.data) setCampaign(got.data);
    else setError(errorOf(got.response, got.error));
    if (listed.data) {
      setEnrollments(listed.data.items);
      // Names are read per person (the list carries ids only); one that cannot be read shows its id.
      const people = await Promise.all(listed.data.items.map(async (e) => [e.person_id, (await api.GET('/contacts/{contact_id}', { params: { path: { contact_id: e.person_id } } })).data?.name ?? null] as const));
      setNames(Object.fromEntries(people.filter(([, name]) => name !== null)) as Record<string, string>);
    }
  }, [campaignId]);
  useEffect(() => {
    void load();
  }, [load]);
  const enrollment = location.query.get('enrollment');

  return (
    <section aria-labelledby="campaign-title">
      <p className="crumbs">
        <Link to="/campaigns">Campaigns</Link> ›
      </p>
      <h1 id="campaign-title">{campaign?.name ?? 'Campaign'}</h1>
      {campaign ? (
        <p className="meta">
          <span className={`status status-${campaign.status}`}>{campaign.status}</span> · goal: {campaign.goal} · up to {campaign.max_touches} touches · {campaign.allowed_channels.join(', ')}
        </p>
      ) : null}
      <LoadState loading={enrollments === null} error={error} />
      <h2>Enrollments</h2>
      {enrollments && enrollments.length === 0 ? <p className="empty">Nobody is enrolled yet.</p> : null}
      {enrollments && enrollments.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Person</th>
              <th scope="col">Status</th>
              <th scope="col">Touches</th>
              <th scope="col">Draft waiting</th>
              <th scope="col">Next check</th>
              <th scope="col">History</th>
            </tr>
          </thead>
          <tbody>
            {enrollments.map((e) => (
              <tr key={e.id} data-enrollment-id={e.id}>
                <td>
                  {names[e.person_id] ?? <code>{e.person_id.slice(0, 8)}</code>} <span className="help">({e.person_kind})</span>
                </td>
                <td>
                  {e.status}
                  {e.ended_reason ? ` (${e.ended_reason})` : ''}
                </td>
                <td>{e.touch_count}</td>
                <td>{e.awaiting_approval ? 'yes' : 'no'}</td>
                <td>{formatTime(e.next_check_at)}</td>
                <td>
                  <button type="button" onClick={() => navigate(withQuery(location, 'enrollment', e.id))} aria-label={`Open history of ${names[e.person_id] ?? e.person_id}`}>
                    Open
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {enrollment ? <EnrollmentDrawer enrollmentId={enrollment} onClose={() => navigate(withQuery(location, 'enrollment', null))} /> : null}
    </section>
  );
}
