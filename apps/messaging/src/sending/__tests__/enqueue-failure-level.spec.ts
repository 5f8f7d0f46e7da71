import { AppError, ErrorCode } from '@touchpoint/errors';
import { enqueueFailureLevel, failedSendLevel } from '../send.service.js';

describe('enqueueFailureLevel (messaging.send_enqueue_failed)', () => {
  it.each([
    [new AppError(ErrorCode.InvalidPayload, 'bad template parameter'), 'warn'],
    [new AppError(ErrorCode.ValidationFailed, 'bad input'), 'warn'],
    [new AppError(ErrorCode.NotFound, 'no such conversation'), 'warn'],
    [new AppError(ErrorCode.OptedOut, 'opted out'), 'info'],
    [new AppError(ErrorCode.Internal, 'boom'), 'error'],
    [new Error('connection reset'), 'error'],
  ])('%s is logged at %s', (err, level) => {
    expect(enqueueFailureLevel(err)).toBe(level);
  });
});

describe('failedSendLevel (a queued send that then failed)', () => {
  it.each([
    ['suppressed', 'info'],
    [ErrorCode.OptedOut, 'info'],
    // The mailbox's daily prospect cap: a rule of ours doing its job (a burst of these once logged 231 errors).
    [ErrorCode.ProspectSendCapReached, 'warn'],
    [ErrorCode.InvalidRecipient, 'warn'],
    // A provider's own code (Meta 131026, undeliverable), an unknown outcome, none at all.
    ['131026', 'error'],
    [ErrorCode.Internal, 'error'],
    [null, 'error'],
  ])('%s is logged at %s', (code, level) => {
    expect(failedSendLevel(code)).toBe(level);
  });
});
