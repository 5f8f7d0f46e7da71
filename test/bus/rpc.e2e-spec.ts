import { ServiceConfig } from '@touchpoint/config';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { DeadLetterAdmin } from '@touchpoint/bus';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { probeService } from './probe.js';

describe(RpcClient.name, () => {
  let world: TestWorld;
  let sut: RpcClient;

  beforeAll(async () => {
    world = await createTestWorld('rpc');
    await world.start(probeService('followups', world.config(ServiceConfig), true));
    const caller = await world.start(probeService('outreach', world.config(ServiceConfig, { RPC_TIMEOUT_MS: '1500' }), false));
    sut = caller.get(RpcClient);
  });
  afterAll(() => world.close());

  it('returns the answer of the owning service', async () => {
    await expect(sut.callUnchecked('followups', 'probe.echo', { a: 1 })).resolves.toEqual({ echoed: { a: 1 } });
  });

  it('answers many requests in flight at once each with its own body', async () => {
    const bodies = Array.from({ length: 40 }, (_, i) => ({ i, text: `request ${i} ✓` }));
    await expect(Promise.all(bodies.map((b) => sut.callUnchecked('followups', 'probe.echo', b)))).resolves.toEqual(bodies.map((b) => ({ echoed: b })));
  });

  it('brings a domain error back as the same AppError', async () => {
    const err = await sut.callUnchecked('followups', 'probe.conflict', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: ErrorCode.Conflict, message: 'probe conflict', details: { why: 'testing' } });
  });

  it('hides an unexpected error behind internal_error with an error id', async () => {
    const err = (await sut.callUnchecked('followups', 'probe.crash', {}).catch((e: unknown) => e)) as AppError;
    expect(err.code).toBe(ErrorCode.Internal);
    expect(JSON.stringify(err)).not.toContain('secret internals');
    expect((err.details as { error_id: string }).error_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('dead-letters a request whose pattern nobody handles and answers with an error', async () => {
    const err = await sut.callUnchecked('followups', 'probe.nobody', { x: 1 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCode.NoHandler });
    const admin = new DeadLetterAdmin(world.amqpUrl, world.namespace);
    const parked = await eventually(async () => (await admin.list('followups')).find((d) => d.reason === 'no_handler'));
    expect(parked).toBeDefined();
    // The server keeps serving.
    await expect(sut.callUnchecked('followups', 'probe.echo', 2)).resolves.toEqual({ echoed: 2 });
  });

  it('answers service_unavailable within the deadline when the service is not running', async () => {
    const started = Date.now();
    const err = await sut.call('abuse', 'platform.ping', {}, 800).catch((e: unknown) => e);
    const took = Date.now() - started;
    expect(err).toMatchObject({ code: ErrorCode.ServiceUnavailable });
    expect(took).toBeLessThan(2000);
  });
});
