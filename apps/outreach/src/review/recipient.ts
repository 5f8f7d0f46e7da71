import type { ContactView, OutboundActionType } from '@touchpoint/contracts';

/** Where an action goes: an email address, or a LinkedIn member (provider id and profile URL). */
export type Recipient = string | { provider_id: string | null; url: string | null };

/**
 * The person's current address for an action type, read fresh (seed 003 §4.5 step 4), or null
 * when they have none. Emails are compared lower-cased.
 */
export function recipientOf(type: OutboundActionType, contact: Pick<ContactView, 'email' | 'linkedin_url' | 'linkedin_provider_id'>): Recipient | null {
  if (type === 'email') return contact.email ? contact.email.toLowerCase() : null;
  if (!contact.linkedin_provider_id && !contact.linkedin_url) return null;
  // An invitation goes by profile; a message needs the member's provider id.
  if (type === 'linkedin_message' && !contact.linkedin_provider_id) return null;
  return { provider_id: contact.linkedin_provider_id ?? null, url: contact.linkedin_url ?? null };
}

/** What a review card shows as "To": the address, or the LinkedIn profile URL. */
export function displayRecipient(to: Recipient | null): string | null {
  if (to === null) return null;
  return typeof to === 'string' ? to : (to.url ?? to.provider_id);
}

/** Whether the frozen `to` of an approved action is still the person's current value (seed 003 §4.6). */
export function sameRecipient(frozen: unknown, current: Recipient | null): boolean {
  if (current === null || frozen === null || frozen === undefined) return false;
  if (typeof current === 'string') return typeof frozen === 'string' && frozen.toLowerCase() === current;
  const f = frozen as { provider_id?: string | null; url?: string | null };
  if (typeof f !== 'object') return false;
  // The provider id is the member; a profile URL stands in only while no provider id was frozen.
  return f.provider_id ? f.provider_id === current.provider_id : !!f.url && f.url === current.url;
}
