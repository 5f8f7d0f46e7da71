import { FaultRegistry } from '../fault-registry.service.js';

describe(FaultRegistry.name, () => {
  let sut: FaultRegistry;
  beforeEach(() => {
    sut = new FaultRegistry();
    sut.register('meta');
  });
  afterEach(() => sut.onModuleDestroy());

  describe('take', () => {
    it('lists a taken fault with its context the moment the call arrives, before the call is recorded', () => {
      sut.script('meta', [{ kind: 'latency', latency_ms: 5000, match: { wa_id: '5511' } }]);
      const before = Date.now();
      const fault = sut.take('meta', { wa_id: '5511', type: 'text' });
      expect(fault).toMatchObject({ kind: 'latency' });
      expect(sut.received('meta')).toEqual([]);
      expect(sut.taken('meta', before)).toEqual([{ taken_at: expect.any(Number), fault: expect.objectContaining({ kind: 'latency' }), context: { wa_id: '5511', type: 'text' } }]);
      expect(sut.taken('meta', Date.now() + 1000)).toEqual([]);
    });

    it('lists nothing for a call that matched no fault', () => {
      expect(sut.take('meta', { wa_id: '5522' })).toBeUndefined();
      expect(sut.taken('meta')).toEqual([]);
    });
  });

  describe('record', () => {
    it('keeps the arrival time of the fault check, not the time after a hold', async () => {
      const context = { wa_id: '5511', type: 'text' };
      sut.take('meta', context);
      await new Promise((resolve) => setTimeout(resolve, 30));
      const call = sut.record('meta', { operation: 'messages', context, body: {}, outcome: 'accepted' });
      expect(call.at - call.arrived_at).toBeGreaterThanOrEqual(25);
    });

    it('uses the record time as the arrival of a call that never reached the fault check (a rejected one)', () => {
      const call = sut.record('meta', { operation: 'messages', context: { to: '' }, body: {}, outcome: 'rejected' });
      expect(call.arrived_at).toBe(call.at);
    });
  });

  it('reset forgets taken faults', () => {
    sut.script('meta', [{ kind: 'error', code: 131000 }]);
    sut.take('meta', {});
    sut.reset();
    expect(sut.taken('meta')).toEqual([]);
  });
});
