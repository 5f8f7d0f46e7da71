import { nextStatus } from '../messages/message-status.js';

describe('nextStatus', () => {
  it.each([
    ['queued', 'sent', 'sent'],
    ['queued', 'delivered', 'delivered'],
    ['queued', 'read', 'read'],
    ['sent', 'delivered', 'delivered'],
    ['delivered', 'read', 'read'],
    ['read', 'delivered', null],
    ['read', 'sent', null],
    ['delivered', 'sent', null],
    ['sent', 'sent', null],
    ['queued', 'failed', 'failed'],
    ['sent', 'failed', 'failed'],
    ['delivered', 'failed', null],
    ['read', 'failed', null],
    ['failed', 'sent', null],
    ['failed', 'read', null],
    ['queued', 'cancelled', 'cancelled'],
    ['sent', 'cancelled', null],
    ['cancelled', 'sent', null],
    ['queued', 'deleted', null],
    ['received', 'read', null],
    ['queued', 'ambiguous', 'ambiguous'],
    ['ambiguous', 'sent', 'sent'],
    ['ambiguous', 'delivered', 'delivered'],
    ['ambiguous', 'failed', 'failed'],
    ['ambiguous', 'cancelled', null],
    ['ambiguous', 'ambiguous', null],
    ['sent', 'ambiguous', null],
    ['failed', 'ambiguous', null],
  ] as const)('%s + %s → %s', (current, incoming, expected) => {
    expect(nextStatus(current, incoming)).toBe(expected);
  });

  it('never moves back over the sequence read, delivered, sent, failed, sent', () => {
    let status: Parameters<typeof nextStatus>[0] = 'queued';
    for (const incoming of ['read', 'delivered', 'sent', 'failed', 'sent']) status = nextStatus(status, incoming) ?? status;
    expect(status).toBe('read');
  });
});
