import { AppError, ErrorCode } from '@touchpoint/errors';
import { enqueueFailureLevel } from '../send.service.js';

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
