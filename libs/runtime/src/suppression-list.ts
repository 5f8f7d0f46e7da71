import { OutboxAccountRpc, type OutboxSuppressionAddResult, type OutboxSuppressionData } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { RpcClient } from './rpc.js';

/**
 * Deadline of the dispatcher calls that put a stop's addresses on the do-not-contact list before
 * the stop is acknowledged, ms (ours). The calls run at once, so the whole wait is one deadline;
 * with the work before it, it stays inside the gateway's RPC_TIMEOUT_MS (5 s).
 */
export const SUPPRESSION_IN_FORCE_TIMEOUT_MS = 1500;

/** One address of a stop: a channel and its value as the sender gave it (the dispatcher keys it). */
export interface SuppressionValue {
  channel: OutboxSuppressionData['channel'];
  value: string;
}

/**
 * Puts every value on the organization's do-not-contact list at the outbox-dispatcher and waits
 * until each is committed there (DESIGN §5.3; seed 003 §5 "stop means stop on every channel"):
 * from the moment the caller acknowledges the stop, nothing queued or asked for later to those
 * addresses starts a wire attempt. The one way every stop (an opt-out by reply, the unsubscribe
 * link, a bounce) is put in force before its answer. The calls run concurrently; the dispatcher
 * upserts, so a repeat is harmless. A value the list cannot key (no phone, no email) is skipped.
 * @param reason the list's `reason` (`opt_out`, `unsubscribed`, `bounced`)
 * @param onFailure told about each value that was not confirmed (for the caller's log)
 * @returns the dispatcher's answer for each value it stored, in `values` order
 * @throws AppError service_unavailable when any value was not confirmed within `timeoutMs`
 *   (`details.failed`: how many); the ones confirmed stay on the list
 */
export async function putSuppressionsInForce(
  rpc: RpcClient,
  organizationId: string,
  values: readonly SuppressionValue[],
  reason: string,
  onFailure?: (value: SuppressionValue, err: unknown) => void,
  timeoutMs = SUPPRESSION_IN_FORCE_TIMEOUT_MS,
): Promise<OutboxSuppressionAddResult[]> {
  const settled = await Promise.allSettled(values.map((v) => rpc.call('outbox-dispatcher', OutboxAccountRpc.SuppressionAdd, { organization_id: organizationId, channel: v.channel, value: v.value, reason }, timeoutMs)));
  const added: OutboxSuppressionAddResult[] = [];
  let failed = 0;
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') added.push(s.value);
    // An address the list cannot key has nothing to suppress.
    else if (!(s.reason instanceof AppError && (s.reason.code === ErrorCode.InvalidRecipient || s.reason.code === ErrorCode.ValidationFailed))) {
      failed++;
      onFailure?.(values[i]!, s.reason);
    }
  });
  if (failed) throw new AppError(ErrorCode.ServiceUnavailable, 'the stop is stored but not yet in force; retry', { failed });
  return added;
}
