import { AppError } from '@touchpoint/errors';
import { assertSameTenant, customerIdsOf } from '../tenancy.js';

const ORG = 'a1b2c3d4-1111-4111-8111-abcdefabcdef';
const OTHER = '22222222-2222-4222-8222-222222222222';

describe('tenancy', () => {
  describe('customerIdsOf', () => {
    it.each([
      ['nothing', {}, []],
      ['the path', { params: { customer_id: ORG } }, [ORG]],
      ['the query', { query: { customer_id: ORG } }, [ORG]],
      ['a repeated query parameter', { query: { customer_id: [ORG, OTHER] } }, [ORG, OTHER]],
      ['the body', { body: { customer_id: OTHER } }, [OTHER]],
      ['all three', { params: { customer_id: ORG }, query: { customer_id: ORG }, body: { customer_id: OTHER } }, [ORG, ORG, OTHER]],
      ['a body that is an array', { body: [{ customer_id: OTHER }] }, []],
      ['a string body', { body: 'customer_id' }, []],
      ['a null customer_id', { body: { customer_id: null } }, [null]],
    ])('finds the customer ids in %s', (_case, request, expected) => {
      expect(customerIdsOf(request)).toEqual(expected);
    });
  });

  describe('assertSameTenant', () => {
    it.each([
      ['no customer_id', {}],
      ['its own id everywhere', { params: { customer_id: ORG }, query: { customer_id: ORG }, body: { customer_id: ORG } }],
    ])('lets a request with %s through', (_case, request) => {
      expect(() => assertSameTenant(ORG, request)).not.toThrow();
    });

    it.each([
      ['in the path', { params: { customer_id: OTHER } }],
      ['in the query', { query: { customer_id: OTHER } }],
      ['among repeated query values', { query: { customer_id: [ORG, OTHER] } }],
      ['in the body', { body: { customer_id: OTHER } }],
      ['as a number', { body: { customer_id: 1 } }],
      ['as null', { body: { customer_id: null } }],
      ['in another letter case (ids are compared exactly)', { params: { customer_id: ORG.toUpperCase() } }],
    ])('answers not_found (never forbidden) for another id %s', (_case, request) => {
      const thrown = (() => {
        try {
          assertSameTenant(ORG, request);
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(thrown).toBeInstanceOf(AppError);
      expect((thrown as AppError).code).toBe('not_found');
    });
  });
});
