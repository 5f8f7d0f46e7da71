import { isDatabaseUnreachable } from '../unreachable.js';

describe('isDatabaseUnreachable', () => {
  it.each([
    ['a cut socket', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['a refused connect', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ["node-postgres's lost connection", new Error('Connection terminated unexpectedly')],
    ["pg-pool's connect timeout", new Error('timeout exceeded when trying to connect')],
    ['too many connections (53300)', Object.assign(new Error('sorry, too many clients already'), { code: '53300' })],
    ['the server shutting down (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['a connection exception (08006)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ["the same inside TypeORM's wrapper", Object.assign(new Error('Query failed'), { driverError: Object.assign(new Error('x'), { code: '57P03' }) })],
  ])('says yes for %s', (_name, err) => {
    expect(isDatabaseUnreachable(err)).toBe(true);
  });

  it.each([
    ['a unique violation (23505)', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a syntax error (42601)', Object.assign(new Error('syntax error'), { code: '42601' })],
    ['a lock timeout (55P03)', Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' })],
    ['a bug of ours', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ["fetch's failure (the provider, not the database)", new TypeError('fetch failed')],
    ['nothing', undefined],
  ])('says no for %s', (_name, err) => {
    expect(isDatabaseUnreachable(err)).toBe(false);
  });
});
