// Imported by its unit test under Node too (test/console), hence the .js extension Node's resolution needs.
import type { Schemas } from '../api/client.js';

/** One line of the drawer: an Outreach item (a card) or one of the person's other messages (a muted line). */
export type DrawerItem = { source: 'outreach'; id: string; at: string | null; item: Schemas['TimelineItemDto'] } | { source: 'crm'; id: string; at: string | null; message: Schemas['MessageDto'] };

/**
 * The client merge of the enrollment drawer (seed 003 §4.5): the enrollment's timeline plus the
 * person's messages from messaging, minus every message the timeline already shows (a thread email
 * by its id, a sent action by its message id); newest first, ties on id (descending), no time last.
 */
export function mergeTimeline(timeline: Schemas['TimelineItemDto'][], messages: Schemas['MessageDto'][]): DrawerItem[] {
  const seen = new Set<string>();
  for (const item of timeline) {
    if (item.kind === 'email' || item.kind === 'linkedin_message') seen.add(item.id);
    const messageId = item.data.message_id;
    if (item.kind === 'action' && typeof messageId === 'string') seen.add(messageId);
  }
  const items: DrawerItem[] = timeline.map((item) => ({ source: 'outreach', id: item.id, at: item.at, item }));
  for (const message of messages) if (!seen.has(message.id)) items.push({ source: 'crm', id: message.id, at: message.sent_at ?? message.created_at, message });
  return items.sort(newestFirst);
}

function newestFirst(a: DrawerItem, b: DrawerItem): number {
  if (a.at === null || b.at === null) return a.at === b.at ? byIdDescending(a, b) : a.at === null ? 1 : -1;
  return Date.parse(b.at) - Date.parse(a.at) || byIdDescending(a, b);
}

function byIdDescending(a: DrawerItem, b: DrawerItem): number {
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}
