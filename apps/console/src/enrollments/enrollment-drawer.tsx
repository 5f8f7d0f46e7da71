import { useEffect, useRef, useState } from 'react';
import { api, errorOf, must, type Schemas } from '../api/client';
import { cutText, formatTime } from '../text';
import { type DrawerItem, mergeTimeline } from './timeline-merge';

/** How many of the person's conversations, and messages per conversation, the drawer reads (ours). */
const CONVERSATIONS_READ = 20;
const MESSAGES_PER_CONVERSATION = 100;
/** How much of a muted line's text is shown, characters. */
const MUTED_LINE_MAX = 200;

interface Loaded {
  enrollment: Schemas['OutreachEnrollmentDto'];
  person: Schemas['ContactDto'] | null;
  items: DrawerItem[];
  missing: string[];
}

/**
 * The enrollment drawer (seed 003 §4.5): one person's history in one timeline. The enrollment's
 * own items (GET .../timeline) show as cards; the person's other messages, read from messaging and
 * merged here, show as muted lines marked "Outreach did not see" (the agent's context never reads
 * them). The filter switches between All (the default) and This enrollment; a prospect has no CRM
 * history, so the filter is hidden for one.
 */
export function EnrollmentDrawer({ enrollmentId, onClose }: { enrollmentId: string; onClose: () => void }) {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [filter, setFilter] = useState<'all' | 'enrollment'>('all');
  const closeRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    closeRef.current?.focus();
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  useEffect(() => {
    let live = true;
    setLoaded(null);
    load(enrollmentId).then(
      (value) => live && setLoaded(value),
      (err: Error) => live && setFailure(err.message),
    );
    return () => {
      live = false;
    };
  }, [enrollmentId]);

  const isCrm = loaded?.enrollment.person_kind === 'crm';
  const shown = loaded?.items.filter((item) => filter === 'all' || item.source === 'outreach') ?? [];

  return (
    <div className="drawer-backdrop" onClick={onClose}>
      <aside className="drawer" role="dialog" aria-modal="true" aria-labelledby="drawer-title" onClick={(e) => e.stopPropagation()}>
        <header className="drawer-head">
          <h2 id="drawer-title">History of {loaded?.person?.name ?? 'the person'}</h2>
          <button type="button" ref={closeRef} onClick={onClose}>
            Close
          </button>
        </header>
        {loaded ? (
          <p className="meta">
            Enrollment <code>{loaded.enrollment.id.slice(0, 8)}</code> · {loaded.enrollment.status}
            {loaded.enrollment.ended_reason ? ` (${loaded.enrollment.ended_reason})` : ''} · {loaded.enrollment.touch_count} touch(es)
          </p>
        ) : null}
        {failure ? (
          <p role="alert" className="error">
            {failure}
          </p>
        ) : null}
        {!loaded && !failure ? <p>Loading…</p> : null}
        {loaded && isCrm ? (
          <div role="radiogroup" aria-label="Show" className="filter">
            <label>
              <input type="radio" name="drawer-filter" checked={filter === 'all'} onChange={() => setFilter('all')} /> All
            </label>
            <label>
              <input type="radio" name="drawer-filter" checked={filter === 'enrollment'} onChange={() => setFilter('enrollment')} /> This enrollment
            </label>
          </div>
        ) : null}
        {loaded && loaded.missing.length ? <p className="help">Not shown (could not be read): {loaded.missing.join(', ')}.</p> : null}
        <ol className="timeline" aria-label="Timeline, newest first">
          {shown.map((entry) => (entry.source === 'outreach' ? <OutreachItem key={entry.id} item={entry.item} /> : <MutedLine key={entry.id} message={entry.message} />))}
        </ol>
      </aside>
    </div>
  );
}

async function load(enrollmentId: string): Promise<Loaded> {
  const path = { enrollment_id: enrollmentId };
  const [enrollment, timeline] = await Promise.all([must(api.GET('/agentic/outreach/enrollments/{enrollment_id}', { params: { path } })), must(api.GET('/agentic/outreach/enrollments/{enrollment_id}/timeline', { params: { path } }))]);
  const missing = [...timeline.missing];
  let person: Schemas['ContactDto'] | null = null;
  let messages: Schemas['MessageDto'][] = [];
  const contact = await api.GET('/contacts/{contact_id}', { params: { path: { contact_id: enrollment.person_id } } });
  if (contact.data) person = contact.data;
  if (enrollment.person_kind === 'crm') {
    try {
      messages = await personMessages(enrollment.person_id);
    } catch {
      missing.push('other messages');
    }
  }
  return { enrollment, person, items: mergeTimeline(timeline.items, messages), missing };
}

/** Every message of the person's conversations (the CRM side of the merge). */
async function personMessages(contactId: string): Promise<Schemas['MessageDto'][]> {
  const conversations = await api.GET('/conversations', { params: { query: { contact_id: contactId, limit: CONVERSATIONS_READ } } });
  if (!conversations.data) throw new Error(errorOf(conversations.response, conversations.error).message);
  const pages = await Promise.all(conversations.data.items.map((c) => must(api.GET('/conversations/{conversation_id}/messages', { params: { path: { conversation_id: c.id }, query: { limit: MESSAGES_PER_CONVERSATION } } }))));
  return pages.flatMap((page) => page.items);
}

const KIND_LABELS: Record<string, string> = { enrolled: 'Enrolled', decision: 'Decision', action: 'Draft', email: 'Email', linkedin_message: 'LinkedIn message', next_check_moved: 'Next check moved', ended: 'Ended' };

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function OutreachItem({ item }: { item: Schemas['TimelineItemDto'] }) {
  const d = item.data;
  const draft = (d.approved_payload ?? d.draft) as { subject?: string; body?: string; note?: string } | null | undefined;
  return (
    <li className={`timeline-card kind-${item.kind}`} data-kind={item.kind}>
      <p className="meta">
        <strong>{KIND_LABELS[item.kind] ?? item.kind}</strong>
        {text(d.direction) ? ` · ${d.direction}` : ''}
        {text(d.status) ? ` · ${d.status}` : ''}
        {text(d.outcome) ? ` · ${d.outcome}` : ''}
        {text(d.type) ? ` · ${d.type}` : ''} · <time dateTime={item.at ?? undefined}>{formatTime(item.at)}</time>
      </p>
      {item.kind === 'decision' ? (
        <p>
          {text(d.rationale) ?? ''}
          {text(d.objective) ? ` Objective: ${d.objective}` : ''}
          {text(d.failure_reason) ? ` Failed: ${d.failure_reason}` : ''}
        </p>
      ) : null}
      {item.kind === 'action' && draft ? (
        <p>
          {draft.subject ? <strong>{draft.subject} — </strong> : null}
          {draft.body ?? draft.note ?? ''}
          {text(d.reject_reason) ? <em> Rejected: {String(d.reject_reason)}</em> : null}
        </p>
      ) : null}
      {item.kind === 'email' || item.kind === 'linkedin_message' ? (
        <p>
          {text(d.subject) ? <strong>{String(d.subject)} — </strong> : null}
          {text(d.body) ?? ''}
        </p>
      ) : null}
      {item.kind === 'ended' ? <p>{text(d.ended_reason) ?? ''}</p> : null}
      {item.kind === 'next_check_moved' ? <p>Next check moved to {formatTime(text(d.next_check_at))}</p> : null}
    </li>
  );
}

function MutedLine({ message }: { message: Schemas['MessageDto'] }) {
  const body = message.body ?? message.subject ?? '';
  return (
    <li className="muted-line" data-kind="crm">
      <span className="tag">Outreach did not see</span> {message.channel} · {message.direction} · <time dateTime={message.sent_at ?? message.created_at}>{formatTime(message.sent_at ?? message.created_at)}</time>: {cutText(body, MUTED_LINE_MAX)}
    </li>
  );
}
