import { jest } from '@jest/globals';
import amqplib from 'amqplib';
import { BusNames, DeadLetterAdmin } from '@touchpoint/bus';
import { ServiceConfig } from '@touchpoint/config';
import { ErrorCode } from '@touchpoint/errors';
import { RPC_PACK_CONTENT_TYPE, RpcClient, TouchpointRmqServer } from '@touchpoint/runtime';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { probeService } from './probe.js';

/**
 * RPC packs (`packRequests`, `TouchpointRmqServer.handlePack`): the requests a caller hands over
 * while its last send to a service waits for the broker's confirm go as one broker message, and the
 * service runs and answers each as if it had come alone.
 */
describe('RPC packs', () => {
  let world: TestWorld;
  let packing: RpcClient;
  let single: RpcClient;
  /** What reached the server's consumer: broker messages, and the requests the packs among them held. */
  let received: { contentType: unknown; requests: number }[];

  beforeAll(async () => {
    world = await createTestWorld('rpc_packs');
    await world.start(probeService('followups', world.config(ServiceConfig), true));
    packing = (await world.start(probeService('outreach', world.config(ServiceConfig, { RPC_TIMEOUT_MS: '3000', RPC_PACK_SIZE: '16' }), false))).get(RpcClient);
    single = (await world.start(probeService('abuse', world.config(ServiceConfig, { RPC_TIMEOUT_MS: '3000', RPC_PACK_SIZE: '1' }), false))).get(RpcClient);
  });
  afterAll(() => world.close());

  beforeEach(() => {
    received = [];
    const handle = TouchpointRmqServer.prototype.handleMessage;
    // Only what the consumer hands over (a pack's own requests come back through handleMessage with their packet as content).
    // A pack's requests share its delivery's `fields`: what comes with a known pack's fields is one of its requests.
    const packFields = new WeakSet<object>();
    jest.spyOn(TouchpointRmqServer.prototype, 'handleMessage').mockImplementation(function (this: TouchpointRmqServer, message, channel) {
      const m = message as { content: Buffer; properties: { contentType?: unknown }; fields: object };
      if (!packFields.has(m.fields)) {
        const pack = m.properties.contentType === RPC_PACK_CONTENT_TYPE;
        let requests = 1;
        if (pack) {
          packFields.add(m.fields);
          try {
            requests = (JSON.parse(m.content.toString()) as unknown[]).length;
          } catch {
            requests = 0;
          }
        }
        received.push({ contentType: m.properties.contentType, requests });
      }
      return handle.call(this, message, channel);
    });
  });
  afterEach(() => jest.restoreAllMocks());

  it('answers 48 requests in flight at once each with its own body, in fewer broker messages, at most 16 requests to a pack', async () => {
    const bodies = Array.from({ length: 48 }, (_, i) => ({ i, text: `request ${i} ✓` }));
    await expect(Promise.all(bodies.map((b) => packing.callUnchecked('followups', 'probe.echo', b)))).resolves.toEqual(bodies.map((b) => ({ echoed: b })));
    const packs = received.filter((r) => r.contentType === RPC_PACK_CONTENT_TYPE);
    expect(packs.length).toBeGreaterThan(0);
    expect(received.reduce((n, r) => n + r.requests, 0)).toBe(48);
    expect(received.length).toBeLessThan(48);
    expect(Math.max(...packs.map((p) => p.requests))).toBeLessThanOrEqual(16);
  });

  it('gives each request of a pack its own outcome: answers, domain errors, unexpected errors and unknown patterns (dead-lettered)', async () => {
    const calls = [
      ...Array.from({ length: 8 }, (_, i) => packing.callUnchecked('followups', 'probe.echo', { i }).then((r) => ({ ok: r }))),
      packing.callUnchecked('followups', 'probe.conflict', {}).catch((e: { code: string }) => ({ err: e.code })),
      packing.callUnchecked('followups', 'probe.crash', {}).catch((e: { code: string }) => ({ err: e.code })),
      packing.callUnchecked('followups', 'probe.nobody', { packed: true }).catch((e: { code: string }) => ({ err: e.code })),
    ];
    const outcomes = await Promise.all(calls);
    expect(outcomes).toEqual([...Array.from({ length: 8 }, (_, i) => ({ ok: { echoed: { i } } })), { err: ErrorCode.Conflict }, { err: ErrorCode.Internal }, { err: ErrorCode.NoHandler }]);
    expect(received.some((r) => r.contentType === RPC_PACK_CONTENT_TYPE)).toBe(true);
    // The request alone is parked (one dead letter, for its pattern), not its pack.
    const admin = new DeadLetterAdmin(world.amqpUrl, world.namespace);
    const parked = await eventually(async () => {
      const all = await admin.list('followups');
      return all.length > 0 ? all : undefined;
    });
    expect(parked!.map((d) => d.reason)).toEqual(['no_handler']);
  });

  it('sends each request alone with RPC_PACK_SIZE=1', async () => {
    const bodies = Array.from({ length: 20 }, (_, i) => ({ i }));
    await expect(Promise.all(bodies.map((b) => single.callUnchecked('followups', 'probe.echo', b)))).resolves.toEqual(bodies.map((b) => ({ echoed: b })));
    expect(received).toHaveLength(20);
    expect(received.every((r) => r.contentType !== RPC_PACK_CONTENT_TYPE)).toBe(true);
  });

  it('dead-letters a pack it cannot read, whole, and keeps serving', async () => {
    const connection = await amqplib.connect(world.amqpUrl);
    try {
      const channel = await connection.createConfirmChannel();
      channel.sendToQueue(BusNames.rpcQueueOf(world.namespace, 'followups'), Buffer.from('[{"pattern": "probe.echo", '), { contentType: RPC_PACK_CONTENT_TYPE, replyTo: 'nobody' });
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
    const admin = new DeadLetterAdmin(world.amqpUrl, world.namespace);
    const parked = await eventually(async () => {
      const all = await admin.list('followups');
      return all.some((d) => d.reason === 'unreadable') ? all : undefined;
    });
    expect(parked!.map((d) => d.reason)).toEqual(['no_handler', 'unreadable']);
    await expect(packing.callUnchecked('followups', 'probe.echo', 'still')).resolves.toEqual({ echoed: 'still' });
  });
});
