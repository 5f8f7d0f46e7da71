/**
 * The transaction-level advisory lock of one recipient (organization, channel, recipient key),
 * which orders a suppression's add against the pre-wire gate (seed 003 §5 "stop means stop";
 * DESIGN §5.3). The gate holds it shared from before it reads the list until its attempt commits
 * (`AttemptsRepository.openAttempts`, never waiting for it); an add holds it exclusively while it
 * writes the row (`SuppressionsRepository.lockRecipient`). So once an add holds it, every attempt
 * that passed the gate without seeing the row has committed, and `SuppressionsService.addInForce`
 * can wait for those to leave the wire; every later gate reads the row.
 *
 * The two-key form (two int4) is its own key space in PostgreSQL, apart from the single-key locks;
 * the `outbox.suppression:` prefix sets these keys apart from the enqueue's two-key locks. Two
 * recipients whose hashes collide only share a lock: at worst a send is handed back once more.
 * @returns the lock's two key expressions, for `pg_advisory_xact_lock(...)` and its variants
 */
export function recipientLockKeys(organizationId: string, channel: string, recipientKey: string): string {
  return `hashtext('outbox.suppression:' || ${organizationId}), hashtext(${channel} || ':' || ${recipientKey})`;
}
