import { Injectable } from '@nestjs/common';
import type { SenderRow } from './senders.repository.js';

/**
 * How long the organization's fallback sender (default connected, else any connected) is reused
 * without reading the read model again, ms. Every release needs it, so this saves a statement per
 * release; a change seen by this process drops it at once, and a number that disconnected in
 * another replica's view is at worst chosen for this long (the dispatcher then refuses it with
 * `sender_disconnected` and the send fails visibly; nothing goes out on it).
 */
export const SENDER_CHOICE_TTL_MS = 2000;

/** The per-organization fallback sender of the release loop, cached briefly. */
@Injectable()
export class SenderChoiceCache {
  private readonly entries = new Map<string, { senderId: string | undefined; expires: number }>();

  /** The cached choice, or `load()`'s (cached for SENDER_CHOICE_TTL_MS). */
  async fallback(organizationId: string, channel: string, load: () => Promise<SenderRow | undefined>): Promise<string | undefined> {
    const key = `${organizationId}:${channel}`;
    const hit = this.entries.get(key);
    if (hit && hit.expires > Date.now()) return hit.senderId;
    const senderId = (await load())?.sender_id;
    this.entries.set(key, { senderId, expires: Date.now() + SENDER_CHOICE_TTL_MS });
    return senderId;
  }

  /** Drops the organization's choices (a sender event was applied). */
  invalidate(organizationId: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(`${organizationId}:`)) this.entries.delete(key);
  }
}
