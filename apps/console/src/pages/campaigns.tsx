import { useCallback, useEffect, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { Link } from '../router';
import { formatTime } from '../text';
import { LoadState } from '../load-state';

type CampaignMove = 'pause' | 'resume' | 'archive';

/**
 * The outreach campaigns, newest first, with pause, resume and archive; and the organization-wide
 * stop. Archive is final (live enrollments end, their drafts are invalidated), so it asks first.
 */
export function CampaignsPage() {
  const [campaigns, setCampaigns] = useState<Schemas['CampaignDto'][] | null>(null);
  const [stoppedAt, setStoppedAt] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState<string | null>(null);

  const load = useCallback(async () => {
    const [listed, settings] = await Promise.all([api.GET('/agentic/outreach/campaigns'), api.GET('/agentic/outreach/settings')]);
    if (listed.data) setCampaigns(listed.data.items);
    else setError(errorOf(listed.response, listed.error));
    if (settings.data) setStoppedAt(settings.data.outreach_stopped_at);
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  const move = async (campaign: Schemas['CampaignDto'], to: CampaignMove) => {
    if (to === 'archive' && !window.confirm(`Archive "${campaign.name}"? Its live enrollments end and their drafts are discarded. This cannot be undone.`)) return;
    setBusy(campaign.id);
    setError(null);
    const path = { campaign_id: campaign.id };
    const answer =
      to === 'pause'
        ? await api.POST('/agentic/outreach/campaigns/{campaign_id}/pause', { params: { path } })
        : to === 'resume'
          ? await api.POST('/agentic/outreach/campaigns/{campaign_id}/resume', { params: { path } })
          : await api.POST('/agentic/outreach/campaigns/{campaign_id}/archive', { params: { path } });
    setBusy(null);
    if (!answer.response.ok) setError(errorOf(answer.response, answer.error));
    await load();
  };

  const stopOrResume = async () => {
    setError(null);
    const answer = stoppedAt ? await api.POST('/agentic/outreach/resume') : await api.POST('/agentic/outreach/stop');
    if (answer.data) setStoppedAt(answer.data.outreach_stopped_at);
    else setError(errorOf(answer.response, answer.error));
  };

  return (
    <section aria-labelledby="campaigns-title">
      <div className="page-head">
        <h1 id="campaigns-title">Campaigns</h1>
        <button type="button" className={stoppedAt ? 'primary' : 'danger'} onClick={() => void stopOrResume()}>
          {stoppedAt ? 'Resume outreach' : 'Stop all outreach'}
        </button>
      </div>
      {stoppedAt ? (
        <p className="banner" role="status">
          Outreach is stopped for the organization since {formatTime(stoppedAt)}: no decision, no send.
        </p>
      ) : null}
      <LoadState loading={campaigns === null} error={error} />
      {campaigns && campaigns.length === 0 ? <p className="empty">No campaign yet. Create one with POST /agentic/outreach/campaigns.</p> : null}
      {campaigns && campaigns.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Channels</th>
              <th scope="col">Live enrollments</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {campaigns.map((c) => (
              <tr key={c.id} data-campaign-id={c.id}>
                <td>
                  <Link to={`/campaigns/${c.id}`}>{c.name}</Link>
                </td>
                <td>
                  <span className={`status status-${c.status}`}>{c.status}</span>
                </td>
                <td>{c.allowed_channels.join(', ')}</td>
                <td>{c.live_enrollments}</td>
                <td>{formatTime(c.created_at)}</td>
                <td className="row-actions">
                  {c.status === 'active' ? (
                    <button type="button" disabled={busy === c.id} onClick={() => void move(c, 'pause')} aria-label={`Pause ${c.name}`}>
                      Pause
                    </button>
                  ) : null}
                  {c.status === 'paused' ? (
                    <button type="button" disabled={busy === c.id} onClick={() => void move(c, 'resume')} aria-label={`Resume ${c.name}`}>
                      Resume
                    </button>
                  ) : null}
                  {c.status !== 'archived' ? (
                    <button type="button" className="danger" disabled={busy === c.id} onClick={() => void move(c, 'archive')} aria-label={`Archive ${c.name}`}>
                      Archive
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
