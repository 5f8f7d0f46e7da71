import { useCallback, useEffect, useId, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { errorsByNode, type GraphError, validationErrorsOf } from '../flows/graph-errors';
import type { PageProps } from '../routes';
import { Link } from '../router';
import { formatTime } from '../text';

type FlowNode = Schemas['FlowNodeDto'];
type FlowEdge = Schemas['FlowEdgeDto'];

/**
 * One follow-up flow (seed 002 "Fluxos"): its draft as a list of node cards, publish (a refused
 * publish shows each `invalid_graph` problem on the node it names), the draft's JSON to fix it,
 * its published versions with rollback to an earlier one, its status (activate, pause, archive:
 * activating needs a published version, else the API answers 422 `publish_required`), and its
 * latest enrollments.
 */
export function FlowPage({ params, session }: PageProps) {
  const flowId = params.flow_id!;
  const customer_id = session.organization_id;
  const [flow, setFlow] = useState<Schemas['FlowDto'] | null>(null);
  const [versions, setVersions] = useState<Schemas['FlowVersionDto'][] | null>(null);
  const [enrollments, setEnrollments] = useState<Schemas['FollowupEnrollmentDto'][] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [graphErrors, setGraphErrors] = useState<GraphError[]>([]);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    const path = { id: flowId };
    const [got, listed, enrolled] = await Promise.all([
      api.GET('/ai/followup-flows/{id}', { params: { path, query: { customer_id } } }),
      api.GET('/ai/followup-flows/{id}/versions', { params: { path, query: { customer_id } } }),
      api.GET('/ai/followups/enrollments', { params: { query: { customer_id, flow_id: flowId, limit: 50 } } }),
    ]);
    if (got.data) setFlow(got.data.data);
    else setError(errorOf(got.response, got.error));
    if (listed.data) setVersions(listed.data.data);
    if (enrolled.data) setEnrollments(enrolled.data.data.data);
  }, [flowId, customer_id]);
  useEffect(() => {
    void load();
  }, [load]);

  /** Runs a change; an `invalid_graph` refusal lands on the nodes, any other on the page's alert. */
  const change = async (run: () => Promise<{ data?: unknown; error?: unknown; response: Response }>, done: string) => {
    setBusy(true);
    setError(null);
    setNotice(null);
    const answer = await run();
    // Reloaded before the outcome shows, so what it says matches the flow on the page (and the
    // next change carries the new revision).
    await load();
    setBusy(false);
    if (answer.response.ok) {
      setGraphErrors([]);
      setNotice(done);
    } else {
      const failure = errorOf(answer.response, answer.error);
      setError(failure);
      setGraphErrors(failure.code === 'invalid_graph' ? validationErrorsOf(failure.details) : []);
    }
  };

  const publish = (current: Schemas['FlowDto']) => change(() => api.POST('/ai/followup-flows/{id}/publish', { params: { path: { id: current.id } }, body: { customer_id, expected_revision: current.revision } }), 'The draft is published as a new version.');
  const rollback = (current: Schemas['FlowDto'], version: Schemas['FlowVersionDto']) =>
    change(() => api.POST('/ai/followup-flows/{id}/rollback', { params: { path: { id: current.id } }, body: { customer_id, expected_revision: current.revision, version_id: version.id } }), `Version ${version.version} is published again.`);
  const setStatus = (current: Schemas['FlowDto'], status: 'active' | 'paused' | 'archived') => {
    if (status === 'archived' && !window.confirm(`Archive "${current.name}"? Its live enrollments are cancelled and it takes no new one.`)) return;
    return change(() => api.PATCH('/ai/followup-flows/{id}', { params: { path: { id: current.id } }, body: { customer_id, expected_revision: current.revision, status } }), `The flow is ${status}.`);
  };
  const saveDraft = (current: Schemas['FlowDto'], graph: Schemas['FlowGraphDto']) =>
    change(() => api.PUT('/ai/followup-flows/{id}', { params: { path: { id: current.id } }, body: { customer_id, expected_revision: current.revision, name: current.name, graph, settings: current.settings } }), 'The draft is saved.');

  const published = versions?.find((v) => v.id === flow?.published_version_id);
  const nodes = flow?.graph.nodes ?? [];
  const sorted = errorsByNode(
    graphErrors,
    nodes.map((n) => n.id),
  );

  return (
    <section aria-labelledby="flow-title">
      <p className="crumbs">
        <Link to="/followups/flows">Flows</Link> ›
      </p>
      <div className="page-head">
        <h1 id="flow-title">{flow?.name ?? 'Flow'}</h1>
        {flow ? (
          <div className="actions">
            {flow.status === 'draft' || flow.status === 'paused' ? (
              <button type="button" disabled={busy} onClick={() => void setStatus(flow, 'active')}>
                Activate
              </button>
            ) : null}
            {flow.status === 'active' ? (
              <button type="button" disabled={busy} onClick={() => void setStatus(flow, 'paused')}>
                Pause
              </button>
            ) : null}
            {flow.status !== 'archived' ? (
              <button type="button" className="danger" disabled={busy} onClick={() => void setStatus(flow, 'archived')}>
                Archive
              </button>
            ) : null}
            <button type="button" className="primary" disabled={busy} onClick={() => void publish(flow)}>
              Publish draft
            </button>
          </div>
        ) : null}
      </div>
      {flow ? (
        <p className="meta">
          <span className={`status status-${flow.status}`}>{flow.status}</span> · published: {flow.published_version_id === null ? 'none' : published ? `version ${published.version}` : '…'} · draft revision {flow.revision}
          {flow.settings.require_approval ? ' · every send waits for a decision' : ''}
        </p>
      ) : null}
      <div aria-live="polite" className="notice">
        {notice}
      </div>
      {error ? (
        <div role="alert" className="error">
          <p>
            <code>{error.code}</code> {error.message}
          </p>
          {error.code === 'invalid_graph' ? <p>Each problem is shown on its node below.</p> : null}
          {sorted.graphWide.length > 0 ? <ProblemList errors={sorted.graphWide} label="Problems of the whole graph" /> : null}
        </div>
      ) : null}
      {flow === null && !error ? <p>Loading…</p> : null}
      {flow ? (
        <>
          <h2>Draft</h2>
          <ol className="cards node-list" aria-label="Nodes of the draft">
            {nodes.map((node) => (
              <li key={node.id}>
                <NodeCard node={node} edges={flow.graph.edges} errors={sorted.byNode.get(node.id) ?? []} />
              </li>
            ))}
          </ol>
          <DraftEditor key={flow.revision} graph={flow.graph} busy={busy} onSave={(graph) => void saveDraft(flow, graph)} />
          <h2>Versions</h2>
          {versions === null ? <p>Loading…</p> : null}
          {versions && versions.length === 0 ? <p className="empty">Nothing is published yet.</p> : null}
          {versions && versions.length > 0 ? (
            <table aria-label="Published versions">
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Published</th>
                  <th scope="col">Nodes</th>
                  <th scope="col">Origin</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {versions.map((v) => {
                  const source = versions.find((o) => o.id === v.source_version_id);
                  return (
                    <tr key={v.id} data-version-id={v.id}>
                      <td>v{v.version}</td>
                      <td>{formatTime(v.published_at)}</td>
                      <td>{v.graph.nodes.length}</td>
                      <td>{v.source_version_id ? `rollback to v${source?.version ?? '?'}` : 'publish'}</td>
                      <td className="row-actions">
                        {v.id === flow.published_version_id ? (
                          <span className="status status-active">current</span>
                        ) : (
                          <button type="button" disabled={busy} onClick={() => void rollback(flow, v)}>
                            Roll back to v{v.version}
                          </button>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          ) : null}
          <h2>Latest enrollments</h2>
          {enrollments && enrollments.length === 0 ? <p className="empty">Nobody is enrolled in this flow.</p> : null}
          {enrollments && enrollments.length > 0 ? (
            <table aria-label="Latest enrollments">
              <thead>
                <tr>
                  <th scope="col">Enrollment</th>
                  <th scope="col">Status</th>
                  <th scope="col">Node</th>
                  <th scope="col">Next run</th>
                </tr>
              </thead>
              <tbody>
                {enrollments.map((e) => (
                  <tr key={e.id}>
                    <td>
                      <Link to={`/followups/enrollments/${e.id}`}>Contact {e.contact_id.slice(0, 8)}</Link>
                    </td>
                    <td>
                      {e.status}
                      {e.reason ? ` (${e.reason})` : ''}
                    </td>
                    <td>{e.node_id ?? '—'}</td>
                    <td>{formatTime(e.next_run_at)}</td>
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

function ProblemList({ errors, label }: { errors: GraphError[]; label: string }) {
  return (
    <ul className="problems" aria-label={label}>
      {errors.map((e, i) => (
        <li key={`${e.code}:${e.branch_id ?? ''}:${i}`}>
          <code>{e.code}</code> {e.message}
          {e.branch_id ? ` (exit ${e.branch_id})` : ''}
        </li>
      ))}
    </ul>
  );
}

/** A node of the draft: its type, what it does, where it leads, and the problems publish found on it. */
function NodeCard({ node, edges, errors }: { node: FlowNode; edges: FlowEdge[]; errors: GraphError[] }) {
  const id = useId();
  const out = edges.filter((e) => e.source === node.id);
  return (
    <article className={`card node${errors.length ? ' node-invalid' : ''}`} aria-labelledby={`${id}-title`} data-node-id={node.id}>
      <h3 id={`${id}-title`}>
        {node.label ?? node.id} <span className="muted">({node.type})</span>
      </h3>
      <dl className="facts">
        <dt>Id</dt>
        <dd>
          <code>{node.id}</code>
        </dd>
        <dt>Does</dt>
        <dd>{describeNode(node)}</dd>
        <dt>Next</dt>
        <dd>{out.length ? out.map((e) => `${e.target} (${conditionText(e.condition)})`).join(', ') : '—'}</dd>
      </dl>
      {errors.length ? <ProblemList errors={errors} label={`Problems of node ${node.label ?? node.id}`} /> : null}
    </article>
  );
}

function conditionText(condition: FlowEdge['condition']): string {
  if (condition.type === 'branch') return `exit ${condition.branch_id ?? '?'}`;
  if (condition.type === 'class_match') return `class ${condition.class_id ?? '?'}`;
  if (condition.type === 'cond_result') return `result ${String(condition.value)}`;
  return condition.type;
}

const MINUTE_MS = 60_000;

function durationText(ms: unknown): string {
  if (typeof ms !== 'number') return '?';
  if (ms % (24 * 60 * MINUTE_MS) === 0) return `${ms / (24 * 60 * MINUTE_MS)} d`;
  if (ms % (60 * MINUTE_MS) === 0) return `${ms / (60 * MINUTE_MS)} h`;
  return `${Math.round(ms / MINUTE_MS)} min`;
}

/** What a node does, in a few words (the config's meaning is documented on the API's FlowNodeDto). */
function describeNode(node: FlowNode): string {
  const c = node.config as Record<string, unknown>;
  switch (node.type) {
    case 'trigger':
      return 'where an enrollment starts';
    case 'wait':
      return c.mode === 'reply' ? `waits for a reply, up to ${durationText(c.timeout_ms)}` : `waits ${durationText(c.duration_ms)}`;
    case 'action': {
      if (c.mode === 'text') return `sends “${typeof c.body === 'string' ? c.body : ''}”`;
      if (c.mode === 'template') return `sends the template ${(c.template as { name?: string } | undefined)?.name ?? '?'}`;
      return `${typeof c.mode === 'string' ? c.mode : 'action'}`;
    }
    case 'end':
      return `ends (${typeof c.outcome === 'string' ? c.outcome : 'completed'})`;
    default:
      return node.type;
  }
}

/** The draft's graph as JSON, to fix what publish refused; saving keeps the name and settings. */
function DraftEditor({ graph, busy, onSave }: { graph: Schemas['FlowGraphDto']; busy: boolean; onSave: (graph: Schemas['FlowGraphDto']) => void }) {
  const id = useId();
  const [text, setText] = useState(() => JSON.stringify(graph, null, 2));
  const [invalid, setInvalid] = useState<string | null>(null);
  const save = () => {
    try {
      const parsed = JSON.parse(text) as Schemas['FlowGraphDto'];
      setInvalid(null);
      onSave(parsed);
    } catch (err) {
      setInvalid((err as Error).message);
    }
  };
  return (
    <details className="draft-editor">
      <summary>Edit the draft as JSON</summary>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save();
        }}
      >
        <label htmlFor={`${id}-graph`}>Draft graph (JSON)</label>
        <textarea id={`${id}-graph`} rows={16} spellCheck={false} value={text} onChange={(e) => setText(e.target.value)} aria-describedby={invalid ? `${id}-invalid` : undefined} />
        {invalid ? (
          <p id={`${id}-invalid`} role="alert" className="error">
            Not JSON: {invalid}
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          Save draft
        </button>
      </form>
    </details>
  );
}
