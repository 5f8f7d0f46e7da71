import { classifyWhatsAppFailure, type WireFailure } from '../../classification/classification.js';
import { ProviderCallError, type ProviderAdapter } from '../../providers/provider-adapter.js';
import { preparationFailure, SenderUnavailable, sendOutcome } from '../send-outcome.js';

/** An adapter that classifies by the WhatsApp table (no quality cooldown) and does nothing else. */
const adapter = { classify: (failure: WireFailure) => classifyWhatsAppFailure(failure, 0) } as unknown as ProviderAdapter;
const backoff = { baseMs: 1000, capMs: 60_000 };
const now = new Date('2026-05-01T10:00:00.000Z');
const text = { max_attempts: 3, payload_type: 'text' as const };
const http = (providerCode: number | null, httpStatus: number) => new ProviderCallError({ kind: 'http', httpStatus, providerCode, retryAfterMs: null }, 'refused', { error: { code: providerCode } }, String(providerCode), { subcode: '2494010' });

describe('sendOutcome', () => {
  it('accepts with the provider id and no classification', () => {
    const sut = sendOutcome(text, adapter, 1, { accepted: { providerMessageId: 'wamid.1', httpStatus: 200, body: { ok: true } } }, now, backoff);
    expect(sut).toEqual({
      end: { outcome: 'accepted', classification: null, providerCode: null, httpStatus: 200, retryAfterMs: null, body: { ok: true } },
      transition: { status: 'accepted', providerMessageId: 'wamid.1', classification: null, errorCode: null, errorMessage: null, httpStatus: 200 },
      classified: null,
    });
  });

  it.each([
    // attempt, what the wire did, payload type → attempt outcome, entry status; the error last
    [1, 'transient 131000', 'text', 'retry', 'pending', http(131000, 500)],
    [3, 'transient 131000', 'text', 'failed', 'failed', http(131000, 500)],
    [1, 'permanent 131026', 'text', 'failed', 'failed', http(131026, 400)],
    [1, 'a timeout', 'text', 'ambiguous', 'ambiguous', new ProviderCallError({ kind: 'timeout' }, 'timed out')],
    [1, 'a timeout', 'read_receipt', 'failed', 'failed', new ProviderCallError({ kind: 'timeout' }, 'timed out')],
    [1, 'a local error', 'text', 'failed', 'failed', new Error('bug')],
  ] as const)('attempt %i of 3 failing with %s (%s) ends %s, the entry %s', (attempts, _label, payloadType, outcome, status, error) => {
    const sut = sendOutcome({ max_attempts: 3, payload_type: payloadType }, adapter, attempts, { error }, now, backoff);
    expect({ outcome: sut.end.outcome, status: sut.transition.status }).toEqual({ outcome, status });
  });

  it('schedules a retry after the exponential backoff of its attempt number', () => {
    const sut = sendOutcome(text, adapter, 2, { error: http(131000, 500) }, now, backoff);
    expect(sut.transition).toMatchObject({ status: 'pending', nextAttemptAt: new Date(now.getTime() + 2000), classification: 'transient', errorCode: '131000', httpStatus: 500, errorSubcode: '2494010' });
  });

  it('records a local error as local_execution with its message', () => {
    const sut = sendOutcome(text, adapter, 1, { error: new Error('bug') }, now, backoff);
    expect(sut.end).toMatchObject({ classification: 'local_execution', providerCode: 'local_execution', body: { source: 'local_execution', message: 'bug' } });
    expect(sut.transition).toMatchObject({ errorCode: 'local_execution', errorMessage: 'bug', httpStatus: null });
  });
});

describe('preparationFailure', () => {
  it('retries an upload that timed out (it sent no message)', () => {
    expect(preparationFailure(new ProviderCallError({ kind: 'timeout' }, 'timed out'), adapter).classified).toMatchObject({ classification: 'transient', action: 'retry' });
  });

  it.each([
    ['a removed sender', 'sender_unavailable', 'sender_unavailable', new SenderUnavailable('the sender was removed')],
    ['a revoked token', 'sender_unauthorized', 'sender_token_invalid', new SenderUnavailable('token revoked', true)],
    ['a local error', 'local_execution', 'local_execution', new Error('bug')],
  ])('fails %s as %s (%s)', (_label, classification, code, err) => {
    const sut = preparationFailure(err, adapter);
    expect({ classification: sut.classified.classification, action: sut.classified.action, code: sut.code, httpStatus: sut.httpStatus }).toEqual({ classification, action: 'fail', code, httpStatus: null });
  });

  it("keeps a provider's code, body and HTTP status", () => {
    expect(preparationFailure(http(131026, 400), adapter)).toMatchObject({ classified: { classification: 'recipient_undeliverable', action: 'fail' }, code: '131026', body: { error: { code: 131026 } }, httpStatus: 400 });
  });
});
