import { AppError } from '@touchpoint/errors';
import { parseJsonBody } from '../json-body.js';

/** The JSON content-type parser of every service (json-body.ts). */
describe('parseJsonBody', () => {
  const refusal = (body: string) => {
    try {
      parseJsonBody(Buffer.from(body));
    } catch (err) {
      return err instanceof AppError ? { code: err.code, details: err.details } : err;
    }
    throw new Error(`accepted ${body}`);
  };

  it('reads an empty body as no body, and parses JSON', () => {
    expect(parseJsonBody(Buffer.alloc(0))).toBeUndefined();
    expect(parseJsonBody(Buffer.from('{"a":[1,{"b":null}],"constructor":"x"}'))).toEqual({ a: [1, { b: null }], constructor: 'x' });
    expect(parseJsonBody('"proto"')).toBe('proto');
  });

  it.each(['{"a":', ' ', 'undefined'])('refuses %p as invalid_json', (body) => {
    expect(refusal(body)).toEqual({ code: 'invalid_json', details: undefined });
  });

  it.each([
    ['{"__proto__":{"admin":true}}', '__proto__'],
    ['{"a":[{"b":{"__proto__":1}}]}', 'a.0.b.__proto__'],
    ['{"\\u005f_proto__":{}}', '__proto__'],
    ['{"x":{"constructor":{"prototype":{}}}}', 'x.constructor.prototype'],
  ])('refuses %s as validation_failed naming %s', (body, field) => {
    expect(refusal(body)).toEqual({ code: 'validation_failed', details: [{ field, problems: ['is a forbidden key'] }] });
  });
});
