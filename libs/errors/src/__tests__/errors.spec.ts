import { AppError, ErrorCode, httpStatusOf, isRetryable } from '../index.js';

describe(httpStatusOf.name, () => {
  it.each([
    [ErrorCode.InvalidJson, 400],
    [ErrorCode.ValidationFailed, 400],
    [ErrorCode.Unauthorized, 401],
    [ErrorCode.Forbidden, 403],
    [ErrorCode.NotFound, 404],
    [ErrorCode.RevisionConflict, 409],
    [ErrorCode.DispatchBusy, 409],
    [ErrorCode.ActionNotPending, 409],
    [ErrorCode.PayloadTooLarge, 413],
    [ErrorCode.InvalidGraph, 422],
    [ErrorCode.InvalidCursor, 422],
    [ErrorCode.ProspectSendCapReached, 429],
    [ErrorCode.ServiceUnavailable, 503],
    [ErrorCode.Internal, 500],
  ])('maps %s to %i', (code, status) => {
    expect(httpStatusOf(code)).toBe(status);
  });

  it('gives every code a status', () => {
    for (const code of Object.values(ErrorCode)) expect(httpStatusOf(code)).toBeGreaterThanOrEqual(400);
  });

  it('treats an unknown code as a server error', () => {
    expect(httpStatusOf('from_a_newer_service')).toBe(500);
  });
});

describe(AppError.name, () => {
  it('round-trips through its envelope', () => {
    const sut = new AppError(ErrorCode.InvalidGraph, 'graph is invalid', { validation_errors: [{ node_id: 'n1' }] });
    const back = AppError.fromEnvelope(JSON.parse(JSON.stringify(sut.toEnvelope())));
    expect(back).toMatchObject({ code: 'invalid_graph', message: 'graph is invalid', details: { validation_errors: [{ node_id: 'n1' }] } });
  });

  it('omits details when there are none', () => {
    expect(new AppError(ErrorCode.NotFound, 'nope').toEnvelope()).toEqual({ error: { code: 'not_found', message: 'nope' } });
  });

  it('does not make an AppError out of something else', () => {
    expect(AppError.fromEnvelope('There is no matching message handler')).toBeUndefined();
    expect(AppError.fromEnvelope({ status: 'error' })).toBeUndefined();
  });
});

describe(isRetryable.name, () => {
  it.each([
    [new Error('connection reset'), true],
    [new AppError(ErrorCode.ServiceUnavailable, 'x'), true],
    [new AppError(ErrorCode.InvalidMessage, 'x'), false],
    [new AppError(ErrorCode.ValidationFailed, 'x'), false],
    [new AppError(ErrorCode.InvalidPayload, 'x'), false],
    [new AppError(ErrorCode.NoHandler, 'x'), false],
  ])('%p → %p', (err, expected) => {
    expect(isRetryable(err)).toBe(expected);
  });
});
