import { Injectable } from '@nestjs/common';
import type { FlowSettings } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { SenderChoiceCache } from '../senders/sender-choice.cache.js';
import { SendersRepository } from '../senders/senders.repository.js';

/** Why a release found no number to send from; the word seed 000 uses for the parked enrollment. */
export const INSTANCE_UNAVAILABLE = 'instance_unavailable';

/** What names a number for one send, before the organization's own choice (default, then any). */
export interface NamedNumbers {
  /** The enrollment's number: given when it was made, then the number its last send went out on. */
  enrollmentSenderId: string | null;
  /** The flow's settings; `sender.sender_id` is the flow's fixed number when `sender.mode` is `fixed`. */
  flowSender: FlowSettings['sender'];
  /** The number the contact last wrote to (messaging names it on each inbound message). */
  lastConversationSenderId: string | null;
}

/**
 * The numbers a send tries before the organization's default and any connected one, in seed 000's
 * order ("number (enrollment, fixed, last conversation, default, any connected)"): the enrollment's,
 * the flow's fixed one, the contact's last conversation's. Each at most once; absent links drop out.
 * @returns sender ids, first choice first
 */
export function namedNumbers(named: NamedNumbers): string[] {
  const fixed = named.flowSender?.mode === 'fixed' ? named.flowSender.sender_id : undefined;
  const chain = [named.enrollmentSenderId, fixed, named.lastConversationSenderId].filter((id): id is string => typeof id === 'string' && id.length > 0);
  return [...new Set(chain)];
}

/**
 * Picks the number a follow-up goes out on: the first usable link of the chain of seed 000
 * ("number … unusable → retry 15 s, pause after 30 min"). A link is usable when followups' read
 * model of the dispatcher's senders has it `connected`, on WhatsApp, in the enrollment's
 * organization; a disconnected, removed or unknown number is passed over for the next link, so a
 * flow whose fixed number went down keeps sending from the contact's last number or the default.
 */
@Injectable()
export class NumberChain {
  constructor(
    private readonly senders: SendersRepository,
    private readonly fallback: SenderChoiceCache,
  ) {}

  /**
   * @returns the sender id to send from, or undefined when no link of the chain is usable now (the
   * caller retries in 15 s and parks the enrollment as `instance_unavailable` after 30 min)
   */
  async choose(tx: Tx, organizationId: string, named: NamedNumbers): Promise<string | undefined> {
    const candidates = namedNumbers(named);
    if (candidates.length) {
      const connected = new Set(await this.senders.connectedAmong(tx, organizationId, 'whatsapp', candidates));
      const first = candidates.find((id) => connected.has(id));
      if (first) return first;
    }
    // The organization's default connected number, else any connected one (cached briefly: every release asks).
    return this.fallback.fallback(organizationId, 'whatsapp', () => this.senders.connectedFallback(tx, organizationId, 'whatsapp'));
  }
}
