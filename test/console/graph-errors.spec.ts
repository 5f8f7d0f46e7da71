import { errorsByNode, validationErrorsOf } from '../../apps/console/src/flows/graph-errors.js';

describe('console graph errors', () => {
  describe('validationErrorsOf', () => {
    it.each([
      ['no details', undefined, []],
      ['details of another error', { reason: 'csrf' }, []],
      ['validation_errors not a list', { validation_errors: 'oops' }, []],
      ['an entry without a code is dropped', { validation_errors: [{ node_id: 'a', message: 'x' }, null] }, []],
      [
        'the seed-002 shape, branch_id kept',
        { validation_errors: [{ node_id: 'w', code: 'exit_uncovered', message: 'the exit timeout leads nowhere', branch_id: 'timeout' }] },
        [{ node_id: 'w', code: 'exit_uncovered', message: 'the exit timeout leads nowhere', branch_id: 'timeout' }],
      ],
      ['a graph-wide entry', { validation_errors: [{ node_id: null, code: 'too_few_nodes', message: 'needs 2 nodes' }] }, [{ node_id: null, code: 'too_few_nodes', message: 'needs 2 nodes', branch_id: null }]],
      ['a missing message shows the code', { validation_errors: [{ node_id: 'a', code: 'unreachable' }] }, [{ node_id: 'a', code: 'unreachable', message: 'unreachable', branch_id: null }]],
    ])('%s', (_name, details, expected) => {
      expect(validationErrorsOf(details)).toEqual(expected);
    });
  });

  describe('errorsByNode', () => {
    it('puts each error on the node it names, keeps their order, and the rest as graph-wide', () => {
      const errors = [
        { node_id: 'a', code: 'c1', message: 'm1' },
        { node_id: null, code: 'c2', message: 'm2' },
        { node_id: 'a', code: 'c3', message: 'm3' },
        { node_id: 'gone', code: 'c4', message: 'm4' },
        { node_id: 'b', code: 'c5', message: 'm5' },
      ];
      const sut = errorsByNode(errors, ['a', 'b', 'c']);
      expect(Object.fromEntries(sut.byNode)).toEqual({ a: [errors[0], errors[2]], b: [errors[4]] });
      expect(sut.graphWide).toEqual([errors[1], errors[3]]);
    });
  });
});
