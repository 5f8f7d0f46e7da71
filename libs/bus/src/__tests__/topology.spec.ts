import { BusNames, retryDelayMs } from '../topology.js';

describe(retryDelayMs.name, () => {
  it.each([
    [1000, 1, 1000],
    [1000, 2, 2000],
    [1000, 3, 4000],
    [100, 5, 1600],
  ])('base %i ms, attempt %i → %i ms', (base, attempt, expected) => {
    expect(retryDelayMs(base, attempt)).toBe(expected);
  });
});

describe(BusNames.name, () => {
  it('prefixes every name with the namespace and service', () => {
    const sut = new BusNames('tp', 'outbox-dispatcher');
    expect([sut.eventsExchange, sut.queue, sut.deadLetterQueue, sut.retryQueue(2), sut.rpcQueue, sut.delayQueue(6500)]).toEqual([
      'tp.events',
      'tp.outbox-dispatcher',
      'tp.outbox-dispatcher.dlq',
      'tp.outbox-dispatcher.retry.2',
      'tp.outbox-dispatcher.rpc',
      'tp.outbox-dispatcher.delay.6500',
    ]);
  });
});
