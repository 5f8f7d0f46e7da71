import { jest } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { ApiKeysRepository } from '../../apps/gateway/src/api-keys/api-keys.repository.js';
import { KEY_LOOKUP_DEADLINE_MS } from '../../apps/gateway/src/api-keys/api-keys.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GATEWAY_ROUTE_MODULES, GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, gatewayTable, httpClient, type SeededKey } from './gateway-world.js';

/**
 * The key lookups of concurrent requests with one secret are shared (`ApiKeysService`), but only
 * with a lookup that starts after the request arrived: a request still never passes with a key
 * that was revoked before it came in.
 */
describe('gateway: API key lookups of concurrent requests', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let builders: ReturnType<typeof gatewayBuilders>;
  let repository: ApiKeysRepository;

  beforeAll(async () => {
    world = await createTestWorld('key_lookups');
    const config = world.config(GatewayConfig, {});
    app = await world.start(GatewayModule.forRoot(config, GATEWAY_ROUTE_MODULES), gatewayStartOptions(config));
    http = httpClient(await app.getUrl());
    builders = gatewayBuilders(app);
    repository = app.get(ApiKeysRepository);
  }, 60_000);
  afterAll(async () => {
    await world?.close();
  });
  afterEach(() => jest.restoreAllMocks());

  it('answers 60 concurrent requests of one key each with its caller, in fewer lookups than requests', async () => {
    const key: SeededKey = await builders.organizationWithKey({});
    const other: SeededKey = await builders.organizationWithKey({});
    // The first lookup is held a moment, so the requests behind it are surely in flight while it
    // runs, however busy the machine (CI once spread all 60 so that none overlapped).
    const findForAuth = repository.findForAuth.bind(repository);
    let held = false;
    const lookups = jest.spyOn(repository, 'findForAuth').mockImplementation(async (...args: Parameters<ApiKeysRepository['findForAuth']>) => {
      if (!held) {
        held = true;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      return findForAuth(...args);
    });
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => http('GET', '/me', { secret: i % 6 === 5 ? other.secret : key.secret })));
    answers.forEach((res, i) => {
      expect(res.status).toBe(200);
      expect(res.body.organization_id).toBe(i % 6 === 5 ? other.organizationId : key.organizationId);
    });
    // Each lookup read the secret it was asked for; most requests shared one.
    expect(lookups.mock.calls.length).toBeLessThan(60);
    expect(lookups.mock.calls.length).toBeGreaterThanOrEqual(2);
  });

  it('a request that arrives after the key was revoked is refused, even while an older lookup of that key is still under way', async () => {
    const key = await builders.organizationWithKey({});
    const real = repository.findForAuth.bind(repository);
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstRead!: () => void;
    const firstDone = new Promise<void>((resolve) => (firstRead = resolve));
    let calls = 0;
    jest.spyOn(repository, 'findForAuth').mockImplementation(async (hash) => {
      const row = await real(hash);
      if (++calls === 1) {
        // The first lookup has read the live key; it answers only after the revocation below.
        firstRead();
        await firstHeld;
      }
      return row;
    });
    const before = http('GET', '/me', { secret: key.secret });
    await firstDone;
    await world.sql(`UPDATE ${gatewayTable(world, 'api_keys')} SET revoked_at = now() WHERE id = $1`, [key.apiKeyId]);
    const after = http('GET', '/me', { secret: key.secret });
    // Give the second request time to reach the guard and queue behind the held lookup.
    await new Promise((resolve) => setTimeout(resolve, 200));
    releaseFirst();
    expect((await before).status).toBe(200);
    const refused = await after;
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');
    expect(calls).toBe(2);
  });

  it('answers 503 within the lookup deadline when a lookup hangs, and the next request of the key starts a lookup of its own', async () => {
    const key = await builders.organizationWithKey({});
    const real = repository.findForAuth.bind(repository);
    let hung = 0;
    jest.spyOn(repository, 'findForAuth').mockImplementation(async (hash) => {
      if (++hung === 1) return new Promise(() => undefined);
      return real(hash);
    });
    const started = Date.now();
    const stuck = await Promise.all([http('GET', '/me', { secret: key.secret }), http('GET', '/me', { secret: key.secret })]);
    expect(stuck.map((r) => r.status)).toEqual([503, 503]);
    expect(stuck[0]!.body.error.code).toBe('service_unavailable');
    expect(Date.now() - started).toBeLessThan(KEY_LOOKUP_DEADLINE_MS + 2_000);
    expect((await http('GET', '/me', { secret: key.secret })).status).toBe(200);
  }, 20_000);
});
