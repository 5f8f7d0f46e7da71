import { useCallback, useEffect, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { LoadState } from '../load-state';
import type { PageProps } from '../routes';
import { Link } from '../router';
import { formatTime } from '../text';

interface FlowRow {
  flow: Schemas['FlowDto'];
  /** Published versions, newest first; null while loading or when they could not be read. */
  versions: Schemas['FlowVersionDto'][] | null;
}

/**
 * The follow-up flows (`GET /ai/followup-flows`, seed 002 "Fluxos"): each with its status, the
 * version it runs and how many it has published (`GET /ai/followup-flows/{id}/versions`).
 */
export function FlowsPage({ session }: PageProps) {
  const [rows, setRows] = useState<FlowRow[] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  const load = useCallback(async () => {
    const customer_id = session.organization_id;
    const listed = await api.GET('/ai/followup-flows', { params: { query: { customer_id } } });
    if (!listed.data) {
      setError(errorOf(listed.response, listed.error));
      return;
    }
    const flows = listed.data.data;
    setRows(flows.map((flow) => ({ flow, versions: null })));
    const versions = await Promise.all(flows.map(async (flow) => (await api.GET('/ai/followup-flows/{id}/versions', { params: { path: { id: flow.id }, query: { customer_id } } })).data?.data ?? null));
    setRows(flows.map((flow, i) => ({ flow, versions: versions[i] ?? null })));
  }, [session.organization_id]);
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section aria-labelledby="flows-title">
      <h1 id="flows-title">Flows</h1>
      <LoadState loading={rows === null} error={error} />
      {rows && rows.length === 0 ? <p className="empty">No flow yet. Create one with POST /ai/followup-flows.</p> : null}
      {rows && rows.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Published version</th>
              <th scope="col">Versions</th>
              <th scope="col">Draft changed</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ flow, versions }) => {
              const published = versions?.find((v) => v.id === flow.published_version_id);
              return (
                <tr key={flow.id} data-flow-id={flow.id}>
                  <td>
                    <Link to={`/followups/flows/${flow.id}`}>{flow.name}</Link>
                  </td>
                  <td>
                    <span className={`status status-${flow.status}`}>{flow.status}</span>
                  </td>
                  <td>{flow.published_version_id === null ? 'none' : published ? `v${published.version}` : '…'}</td>
                  <td>{versions === null ? '…' : versions.length}</td>
                  <td>{formatTime(flow.updated_at)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
