import { classifyWhatsAppFailure, parseRetryAfter, retryDelayMs, type WireFailure } from '../classification.js';

const COOLDOWN = 3_600_000;
const http = (providerCode: number | null, httpStatus = 400, retryAfterMs: number | null = null): WireFailure => ({ kind: 'http', httpStatus, providerCode, retryAfterMs });

describe('classifyWhatsAppFailure', () => {
  // Seed 004 "Error classification": one row per code.
  it.each([
    [131056, 'rate_limited', 'retry'],
    [130429, 'rate_limited', 'retry'],
    [80007, 'rate_limited', 'retry'],
    [2, 'transient', 'retry'],
    [4, 'transient', 'retry'],
    [131000, 'transient', 'retry'],
    [131016, 'transient', 'retry'],
    [131057, 'transient', 'retry'],
    [133004, 'transient', 'retry'],
    [131064, 'quality_cooldown', 'retry'],
    [131048, 'account_restricted', 'fail'],
    [368, 'account_restricted', 'fail'],
    [130497, 'account_restricted', 'fail'],
    [131031, 'account_restricted', 'fail'],
    [131026, 'recipient_undeliverable', 'fail'],
  ])('classifies code %i as %s (%s)', (code, classification, action) => {
    const sut = classifyWhatsAppFailure(http(code), COOLDOWN);
    expect({ classification: sut.classification, action: sut.action }).toEqual({ classification, action });
  });

  it.each([131048, 368, 130497, 131031])('flags code %i as an account restriction', (code) => {
    expect(classifyWhatsAppFailure(http(code), COOLDOWN).accountRestricted).toBe(true);
  });

  it.each([131026, 131056, 2, 100])('does not flag code %i as an account restriction', (code) => {
    expect(classifyWhatsAppFailure(http(code), COOLDOWN).accountRestricted).toBe(false);
  });

  it.each([
    [100, 400],
    [131008, 400],
    [10, 403],
    [null, 404],
    [null, 429],
  ])('treats other 4xx (code %p, HTTP %i) as permanent', (code, status) => {
    expect(classifyWhatsAppFailure(http(code, status), COOLDOWN)).toMatchObject({ classification: 'permanent', action: 'fail' });
  });

  it('classes 190 (expired or invalid token) as sender_unauthorized, never retried: the sender is disconnected', () => {
    expect(classifyWhatsAppFailure(http(190, 401), COOLDOWN)).toMatchObject({ classification: 'sender_unauthorized', action: 'fail', accountRestricted: false });
  });

  it('decides by the code, not the HTTP status: a transient code on a 400 is retried', () => {
    expect(classifyWhatsAppFailure(http(131000, 400), COOLDOWN)).toMatchObject({ classification: 'transient', action: 'retry' });
  });

  it('decides by the code, not the HTTP status: a permanent code on a 500 is not retried', () => {
    expect(classifyWhatsAppFailure(http(131026, 500), COOLDOWN)).toMatchObject({ classification: 'recipient_undeliverable', action: 'fail' });
  });

  it('retries an unknown code on a 5xx as transient', () => {
    expect(classifyWhatsAppFailure(http(null, 502), COOLDOWN)).toMatchObject({ classification: 'transient', action: 'retry' });
  });

  it.each(['timeout', 'network'] as const)('parks a %s as ambiguous', (kind) => {
    expect(classifyWhatsAppFailure({ kind }, COOLDOWN)).toMatchObject({ classification: 'ambiguous', action: 'park_ambiguous' });
  });

  it('fails a local executor fault as permanent, never ambiguous', () => {
    expect(classifyWhatsAppFailure({ kind: 'local' }, COOLDOWN)).toMatchObject({ classification: 'local_execution', action: 'fail' });
  });

  it.each([131056, 130429, 80007])('takes Retry-After as the floor for code %i', (code) => {
    expect(classifyWhatsAppFailure(http(code, 400, 120_000), COOLDOWN).floorMs).toBe(120_000);
  });

  it('takes Retry-After as the floor for transient codes too', () => {
    expect(classifyWhatsAppFailure(http(131000, 503, 30_000), COOLDOWN).floorMs).toBe(30_000);
  });

  it('floors 131064 at the quality cooldown, or a longer Retry-After', () => {
    expect(classifyWhatsAppFailure(http(131064), COOLDOWN).floorMs).toBe(COOLDOWN);
    expect(classifyWhatsAppFailure(http(131064, 400, COOLDOWN * 2), COOLDOWN).floorMs).toBe(COOLDOWN * 2);
  });
});

describe('retryDelayMs', () => {
  const policy = { baseMs: 10_000, capMs: 900_000 };

  it.each([
    [1, 10_000],
    [2, 20_000],
    [3, 40_000],
    [4, 80_000],
    [7, 640_000],
    [8, 900_000],
    [20, 900_000],
  ])('after attempt %i waits %i ms', (attempt, delay) => {
    expect(retryDelayMs(policy, attempt)).toBe(delay);
  });

  it('honours a floor longer than the backoff', () => {
    expect(retryDelayMs(policy, 1, 45_000)).toBe(45_000);
  });

  it('keeps the backoff when the floor is shorter', () => {
    expect(retryDelayMs(policy, 3, 5_000)).toBe(40_000);
  });

  it('lets a floor exceed the cap', () => {
    expect(retryDelayMs(policy, 8, 3_600_000)).toBe(3_600_000);
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2026-03-01T12:00:00Z');
  it.each([
    ['120', 120_000],
    ['0', 0],
    ['1.5', 1500],
    ['Sun, 01 Mar 2026 12:01:00 GMT', 60_000],
    ['Sun, 01 Mar 2026 11:00:00 GMT', 0],
  ])('reads %p as %i ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });

  it.each([undefined, null, '', 'soon'])('gives null for %p', (value) => {
    expect(parseRetryAfter(value, now)).toBeNull();
  });
});
