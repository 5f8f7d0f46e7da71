import 'reflect-metadata';
import type { MessageProperties } from 'amqplib';
import type { DataSource } from 'typeorm';
import type { BusMessage } from '@touchpoint/contracts';
import { createLogger, Metrics } from '@touchpoint/observability';
import { BusConnection } from '../bus.js';
import { BUS_HANDLER, BUS_HANDLER_FILTER, OnBusMessage } from '../decorators.js';

const message = (data: Record<string, unknown>): BusMessage => ({ event_id: `e-${Math.random()}`, type: 'messaging.message.sent', organization_id: 'org-1', occurred_at: new Date().toISOString(), data });

describe(OnBusMessage.name, () => {
  it('stores the type, and the `when` beside it only when one is given', () => {
    const ours = (m: BusMessage<{ requester: string }>) => m.data?.requester === 'followups';
    class Consumer {
      @OnBusMessage('messaging.message.sent', { when: ours }) async filtered(): Promise<void> {}
      @OnBusMessage('messaging.message.sent') async plain(): Promise<void> {}
    }
    expect(Reflect.getMetadata(BUS_HANDLER, Consumer.prototype.filtered)).toBe('messaging.message.sent');
    expect(Reflect.getMetadata(BUS_HANDLER_FILTER, Consumer.prototype.filtered)).toBe(ours);
    expect(Reflect.getMetadata(BUS_HANDLER, Consumer.prototype.plain)).toBe('messaging.message.sent');
    expect(Reflect.getMetadata(BUS_HANDLER_FILTER, Consumer.prototype.plain)).toBeUndefined();
  });
});

describe(`${BusConnection.name} handler filters`, () => {
  let sut: BusConnection;
  let metrics: Metrics;
  /** Every use of the database: a message all handlers reject must not make one. */
  const dbUses: string[] = [];
  const dataSource = new Proxy({} as DataSource, { get: (_, key) => void dbUses.push(String(key)) });

  beforeEach(() => {
    dbUses.length = 0;
    metrics = new Metrics('test');
    // Nothing listens on port 1: the connection retries in the background and is never needed.
    sut = new BusConnection({ service: 'followups', schema: 'fu', amqpUrl: 'amqp://127.0.0.1:1', namespace: 'unit', maxAttempts: 3, retryBaseMs: 100, prefetch: 10, batchSize: 16 }, dataSource, createLogger('test', 'silent'), metrics);
  });
  afterEach(() => sut.close());

  const skipped = async (handler: string) => (await metrics.busConsumed.get()).values.find((v) => v.labels.handler === handler && v.labels.outcome === 'skipped')?.value ?? 0;
  /** Runs `messages` as one consumer batch; answers the acked ones. */
  const run = async (messages: BusMessage[]) => {
    const acked: BusMessage[] = [];
    const items = messages.map((m) => ({ delivery: { read: () => m, content: () => Buffer.from(JSON.stringify(m)), properties: { headers: {} } as unknown as MessageProperties, routingKey: m.type, ack: () => void acked.push(m) }, message: m, settle: () => undefined }));
    await (sut as unknown as { runBatch(b: unknown[]): Promise<void> }).runBatch(items);
    return acked;
  };

  /**
   * Runs `messages` against the stub database, which fails the transaction (its retry would wait
   * for the broker, so the run is abandoned when the connection closes): it must have been asked for one.
   */
  const asksForTransaction = async (messages: BusMessage[]) => {
    const pending = run(messages).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(dbUses.length).toBeGreaterThan(0);
    await sut.close();
    await pending;
  };

  it.each([
    ['alone', 1],
    ['in a batch', 5],
  ])('acks a message no handler accepts (%s) without a transaction, counting it skipped for each handler', async (_, n) => {
    const ran: string[] = [];
    sut.addHandler('messaging.message.sent', 'A.onSent', async () => void ran.push('A'), { when: (m) => (m.data as { requester?: string })?.requester === 'followups' });
    sut.addHandler('messaging.message.sent', 'B.onSent', async () => void ran.push('B'), { when: (m) => (m.data as { requester?: string })?.requester === 'outreach' });
    const messages = Array.from({ length: n }, () => message({ requester: 'messaging' }));

    expect(await run(messages)).toEqual(messages);
    expect(ran).toEqual([]);
    expect(dbUses).toEqual([]);
    expect(await skipped('A.onSent')).toBe(n);
    expect(await skipped('B.onSent')).toBe(n);
  });

  it('hands a message to the database when one handler accepts it, and counts only the others skipped', async () => {
    sut.addHandler('messaging.message.sent', 'A.onSent', async () => undefined, { when: (m) => (m.data as { requester?: string })?.requester === 'followups' });
    sut.addHandler('messaging.message.sent', 'B.onSent', async () => undefined, { when: () => false });
    await asksForTransaction([message({ requester: 'followups' })]);
    expect(await skipped('A.onSent')).toBe(0);
    expect(await skipped('B.onSent')).toBe(1);
  });

  it('lets a message through when its `when` throws (a faulty filter never drops a message unseen)', async () => {
    sut.addHandler('messaging.message.sent', 'A.onSent', async () => undefined, {
      when: (m) => (m.data as { nested: { requester: string } }).nested.requester === 'followups',
    });
    await asksForTransaction([message({})]);
    expect(await skipped('A.onSent')).toBe(0);
  });
});
