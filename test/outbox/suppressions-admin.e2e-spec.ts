import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { OutboxAccountRpc, OutreachDispatcherRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { type Dispatcher, SandboxHandle, startDispatcher } from './harness.js';

/**
 * `DELETE /suppressions` (seed 003 §5 `contact_suppressions`: never cleared by code; a user with the
 * admin scope removes a row), through the gateway to the dispatcher, and what the list answers after.
 */
describe('DELETE /suppressions', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let admin: SeededKey;
  let reader: SeededKey;

  beforeAll(async () => {
    world = await createTestWorld('outbox_suppressions');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox);
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient((await gateway.getUrl()).replace('[::1]', '127.0.0.1'));
    admin = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin'] });
    reader = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['messaging:read'] });
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const check = (org: string, value: string) => d.app.get(RpcClient).callUnchecked<{ suppressed: unknown[] }>('outbox-dispatcher', OutreachDispatcherRpc.SuppressionCheck, { organization_id: org, values: [{ channel: 'email', value }] });

  it('removes a row for an admin key (the address can be contacted again), refuses other scopes, and validates the body', async () => {
    const email = `Ana.${randomUUID().slice(0, 6)}@Example.com`;
    await d.suppressions.add({ organization_id: admin.organizationId, channel: 'email', value: email, reason: 'unsubscribed' });
    expect((await check(admin.organizationId, email)).suppressed).toHaveLength(1);

    expect((await http('DELETE', '/suppressions', { secret: reader.secret, json: { channel: 'email', value: email } })).status).toBe(403);
    expect((await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'fax', value: email } })).status).toBe(400);
    expect((await check(admin.organizationId, email)).suppressed).toHaveLength(1);

    const res = await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email } });
    expect(res).toMatchObject({ status: 200, body: { removed: true, channel: 'email', value: email.toLowerCase() } });
    expect((await check(admin.organizationId, email)).suppressed).toEqual([]);
  });

  it('answers removed: false for a value that was not on the list (and for a repeat)', async () => {
    const email = `never.${randomUUID().slice(0, 6)}@example.com`;
    expect(await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email } })).toMatchObject({ status: 200, body: { removed: false, channel: 'email', value: email } });
    await d.suppressions.add({ organization_id: admin.organizationId, channel: 'email', value: email });
    expect(await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email } })).toMatchObject({ status: 200, body: { removed: true } });
    expect(await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email } })).toMatchObject({ status: 200, body: { removed: false } });
  });

  it('only touches the caller organization', async () => {
    const other = `org-${randomUUID()}`;
    const email = `bo.${randomUUID().slice(0, 6)}@example.com`;
    await d.suppressions.add({ organization_id: other, channel: 'email', value: email });
    await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email } });
    expect((await check(other, email)).suppressed).toHaveLength(1);
    expect(OutboxAccountRpc.SuppressionRemove).toBe('outbox.suppressions.remove');
  });
});
