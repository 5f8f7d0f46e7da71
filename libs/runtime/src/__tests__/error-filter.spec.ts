import { AppError, ErrorCode } from '@touchpoint/errors';
import { createLogger } from '@touchpoint/observability';
import { toEnvelope } from '../error-filter.js';

const logger = createLogger('test', 'silent');
const pgError = (code: string) => Object.assign(new Error('pg says no'), { code });

describe(toEnvelope.name, () => {
  it('keeps a domain error as it is', () => {
    expect(toEnvelope(new AppError(ErrorCode.RevisionConflict, 'stale'), logger)).toEqual({ status: 409, body: { error: { code: 'revision_conflict', message: 'stale' } } });
  });

  it.each(['53300', '57P03', '08006', 'ECONNREFUSED'])('answers 503 service_unavailable for database error %s', (code) => {
    expect(toEnvelope(pgError(code), logger)).toMatchObject({ status: 503, body: { error: { code: 'service_unavailable' } } });
  });

  it('looks through a wrapped driver error', () => {
    expect(toEnvelope(Object.assign(new Error('query failed'), { driverError: { code: '53300' } }), logger).status).toBe(503);
  });

  it.each([
    ['22021', 400, 'validation_failed'],
    ['22P05', 400, 'validation_failed'],
    ['22001', 400, 'validation_failed'],
    ['22003', 400, 'validation_failed'],
    ['22008', 400, 'validation_failed'],
    ['22P02', 400, 'validation_failed'],
    ['2201B', 400, 'validation_failed'],
    ['23502', 400, 'validation_failed'],
    ['23514', 400, 'validation_failed'],
    ['23503', 404, 'not_found'],
    ['23505', 409, 'conflict'],
    ['54000', 400, 'validation_failed'],
  ])('answers a 4xx for input the database refuses (SQLSTATE %s → %i %s), without its message', (code, status, errorCode) => {
    const answer = toEnvelope(Object.assign(new Error('query failed'), { driverError: pgError(code) }), logger);
    expect(answer).toMatchObject({ status, body: { error: { code: errorCode } } });
    expect(JSON.stringify(answer.body)).not.toContain('pg says no');
  });

  it('answers 400 for a body nested deeper than validation can walk', () => {
    expect(toEnvelope(new RangeError('Maximum call stack size exceeded'), logger)).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } });
  });

  it('hides anything else behind internal_error with an error id', () => {
    const { status, body } = toEnvelope(pgError('42P01'), logger);
    expect(status).toBe(500);
    expect(body.error.code).toBe('internal_error');
    expect(JSON.stringify(body)).not.toContain('pg says no');
  });
});
