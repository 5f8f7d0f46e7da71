import { useCallback, useEffect, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { useQueueTotal } from '../badge';
import { EnrollmentDrawer } from '../enrollments/enrollment-drawer';
import { LoadState } from '../load-state';
import { pruneEdits } from '../review/edits';
import { type CardOutcome, ReviewCard } from '../review/review-card';
import type { PageProps } from '../routes';
import { navigate, withQuery } from '../router';

/** The largest page the queue route gives (ours: the gateway's ReviewQueueQuery). */
const QUEUE_LIMIT = 200;

/**
 * The Review tab (seed 003 §4.5): every pending draft of the organization, oldest first, one card
 * each; the nav badge shows the total. `?enrollment=<id>` opens that enrollment's drawer.
 */
export function ReviewPage({ location }: PageProps) {
  const [queue, setQueue] = useState<Schemas['ReviewQueueDto'] | null>(null);
  const [stoppedAt, setStoppedAt] = useState<string | null>(null);
  const [failure, setFailure] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const badge = useQueueTotal();

  const load = useCallback(async () => {
    const [listed, settings] = await Promise.all([api.GET('/agentic/outreach/actions', { params: { query: { limit: QUEUE_LIMIT } } }), api.GET('/agentic/outreach/settings')]);
    if (!listed.data) {
      setFailure(errorOf(listed.response, listed.error));
      return;
    }
    setFailure(null);
    setQueue(listed.data);
    if (settings.data) setStoppedAt(settings.data.outreach_stopped_at);
    // With the whole queue in hand, edits of drafts that left it (approved in another tab, replaced) go.
    if (listed.data.items.length === listed.data.total) pruneEdits(new Set(listed.data.items.map((item) => item.id)));
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  const done = (id: string, outcome: CardOutcome) => {
    setNotice(outcome.message);
    setQueue((q) => (q ? { ...q, items: q.items.filter((item) => item.id !== id), total: Math.max(0, q.total - 1) } : q));
    badge.refresh();
    // A regenerate brings a new draft later; reading again also catches what others did meanwhile.
    void load();
  };
  const enrollment = location.query.get('enrollment');

  return (
    <section aria-labelledby="review-title">
      <div className="page-head">
        <h1 id="review-title">Review queue</h1>
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      <p className="lead">Every message outreach wants to send waits here until a person approves it. Oldest first.</p>
      {stoppedAt ? (
        <p className="banner" role="status">
          Outreach is stopped for the organization (since {new Date(stoppedAt).toLocaleString()}): nothing can be approved until it is resumed.
        </p>
      ) : null}
      <div aria-live="polite" className="notice">
        {notice}
      </div>
      <LoadState loading={queue === null} error={failure} />
      {queue && queue.items.length === 0 ? <p className="empty">Nothing is waiting for review.</p> : null}
      {queue && queue.total > queue.items.length ? (
        <p className="help">
          Showing the oldest {queue.items.length} of {queue.total}.
        </p>
      ) : null}
      <div className="cards">
        {queue?.items.map((card) => (
          <ReviewCard key={card.id} card={card} outreachStopped={stoppedAt !== null} onDone={done} onStale={() => void load()} onOpenHistory={(id) => navigate(withQuery(location, 'enrollment', id))} />
        ))}
      </div>
      {enrollment ? <EnrollmentDrawer enrollmentId={enrollment} onClose={() => navigate(withQuery(location, 'enrollment', null))} /> : null}
    </section>
  );
}
