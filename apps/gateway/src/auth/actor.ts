import type { Caller } from './auth.decorators.js';

/**
 * Who a person's action is recorded as: `member:<id>`, the member the API key (or the console
 * session made from it) acts for (seed 003 §4.5: approvals and rejections record a member; the
 * do-not-contact list and the ambiguous-send resolutions record the same).
 */
export function actorOf(caller: Caller): string {
  return `member:${caller.createdBy.memberId}`;
}
