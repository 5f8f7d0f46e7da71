import { Injectable } from '@nestjs/common';
import type { MessageView } from '@touchpoint/contracts';
import { PeopleDirectory } from '../directory/people.directory.js';
import type { ActionRow } from '../review/actions.repository.js';

/** Messages read per conversation (ours: newest first, enough for any thread the context can hold). */
const THREAD_READ_LIMIT = 100;

/** The enrollment's Outreach threads, newest first (seed 003 §4.2, The thread). */
export interface OutreachThreads {
  email: MessageView[];
  linkedin: MessageView[];
}

/**
 * Reads the messages of an enrollment's Outreach threads from messaging. Email: every message of
 * the threads our executed emails live in (the email thread id of each executed action's message),
 * including a user's manual reply in them; a thread the user starts is outside. LinkedIn: the chat
 * of the person on the channel once we sent in it.
 * @throws AppError service_unavailable when messaging does not answer
 */
@Injectable()
export class ThreadReader {
  constructor(private readonly people: PeopleDirectory) {}

  async read(organizationId: string, actions: ActionRow[], timeoutMs?: number): Promise<OutreachThreads> {
    const sent = actions.filter((a) => a.conversation_id && (a.status === 'executed' || (a.status === 'failed' && a.outcome_unknown) || a.status === 'sending'));
    const byConversation = new Map<string, ActionRow[]>();
    for (const a of sent) byConversation.set(a.conversation_id!, [...(byConversation.get(a.conversation_id!) ?? []), a]);
    const out: OutreachThreads = { email: [], linkedin: [] };
    await Promise.all(
      [...byConversation.entries()].map(async ([conversationId, ours]) => {
        const messages = await this.people.conversationMessages(organizationId, conversationId, THREAD_READ_LIMIT, timeoutMs);
        const ourIds = new Set(ours.map((a) => a.message_id).filter(Boolean));
        if (ours[0]!.type === 'email') {
          const threads = new Set(messages.filter((m) => ourIds.has(m.id) && m.thread_id).map((m) => m.thread_id));
          const ourExternal = new Set(messages.filter((m) => ourIds.has(m.id) && m.external_id).map((m) => m.external_id));
          // Until the email sender reports the thread id of what it sent, our rows have none: then
          // every inbound email of the person's conversation since our first send is in the thread.
          const firstSent = Math.min(...ours.map((a) => (a.executed_at ?? a.updated_at).getTime()));
          const unthreaded = threads.size === 0;
          out.email.push(...messages.filter((m) => ourIds.has(m.id) || (m.thread_id && threads.has(m.thread_id)) || (m.direction === 'inbound' && (inReplyTo(m, ourExternal) || (unthreaded && Date.parse(m.created_at) >= firstSent)))));
        } else {
          const first = Math.min(...ours.map((a) => (a.executed_at ?? a.updated_at).getTime()));
          out.linkedin.push(...messages.filter((m) => ourIds.has(m.id) || Date.parse(m.created_at) >= first));
        }
      }),
    );
    const newestFirst = (a: MessageView, b: MessageView) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? 1 : -1);
    out.email.sort(newestFirst);
    out.linkedin.sort(newestFirst);
    return out;
  }
}

/** An inbound message that quotes one of ours (messaging keeps the quoted provider id). */
function inReplyTo(m: MessageView, ourExternal: Set<string | null>): boolean {
  const quoted = (m as MessageView & { in_reply_to?: string | null }).in_reply_to;
  return !!quoted && ourExternal.has(quoted);
}
